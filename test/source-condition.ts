/**
 * The export condition under which `"eddy"` means this repository's sources (packages/eddy's
 * exports map), and how it is spelled in NODE_OPTIONS: test/fixtures.ts adds it for the children
 * of tests, test/npm-project.ts removes it for a user's shell.
 */
export const SOURCE_CONDITION_OPTION = "--conditions=eddy-source";
/** `--conditions=eddy-source`, `--conditions eddy-source` or `-C eddy-source`. */
export const SOURCE_CONDITION_IN_OPTIONS = /(?:--conditions[= ]|-C ?)eddy-source\b/g;
