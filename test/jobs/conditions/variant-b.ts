/** What `#variant` resolves to without the `eddy-test-variant` condition (package.json here). */
export default "b";
