/** The keyed state backend contract (testing/keyed-state-backend-contract.ts) against the heap backend. */
import { keyedStateBackendContract } from "../testing/keyed-state-backend-contract.ts";
import { heapStateBackend } from "./heap-keyed-state-backend.ts";

keyedStateBackendContract("heap", heapStateBackend);
