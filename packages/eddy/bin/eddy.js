#!/usr/bin/env node
// Entry point of the `eddy` command. Registers tsx so job files (and Eddy's own sources) run as
// TypeScript without a build step, then hands over to the CLI.
import { register } from "tsx/esm/api";

register();
await import("../src/cluster/cli.ts");
