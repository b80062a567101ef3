/** What `#variant` resolves to under the `eddy-test-variant` condition (package.json here). */
export default "a";
