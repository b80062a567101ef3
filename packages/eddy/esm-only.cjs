// What `require("eddy")` gets: Eddy is an ES module package (its jobs are ES modules too, see
// the README). A CommonJS project (what `npm init` makes) needs "type": "module" in its package.json.
"use strict";
const error = new Error(
  'Eddy is an ES module package and cannot be loaded with require(). Add "type": "module" to your ' +
    "project's package.json (npm init makes CommonJS projects), or name the file .mts, and use " +
    'import { … } from "eddy".',
);
error.code = "ERR_EDDY_ESM_ONLY";
throw error;
