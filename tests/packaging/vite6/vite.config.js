// The README's recipe for Vite <= 6: without it the dev server's dependency pre-bundler moves
// the package's module away from its wasm, and init() is handed index.html instead.
export default { optimizeDeps: { exclude: ["@dpas/host"] } };
