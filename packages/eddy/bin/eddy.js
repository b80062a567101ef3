#!/usr/bin/env node
// Entry point of the `eddy` command. Registers tsx so job files run as TypeScript, then hands over
// to the CLI: Eddy's build (dist/), or its sources under the "eddy-source" condition (this
// repository's tests and scripts run node with --conditions=eddy-source).
import { register } from "tsx/esm/api";

register();
await import("eddy/cli");
