/** The stylesheet main.ts imports: esbuild bundles it into app.css. */
declare module "*.css";
