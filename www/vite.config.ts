import { fileURLToPath } from "node:url";
import { defineConfig, searchForWorkspaceRoot } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` proxies the server's routes to a running host-server
// (DPAS_SERVER, default http://127.0.0.1:8080).
const server = process.env.DPAS_SERVER ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  server: {
    // `src/routes.ts` imports the demo's route table from host-server (one file for both).
    fs: {
      allow: [
        searchForWorkspaceRoot(process.cwd()),
        fileURLToPath(new URL("../demo/src/routes.json", import.meta.url)),
      ],
    },
    proxy: {
      "/api": server,
      "/rpc": server,
      "/agent": server,
    },
  },
  // One app chunk of about 280 kB gzip (React, TanStack, assistant-ui) beside the wasm; the
  // dock is on screen from the start, so splitting it off would not load anything later.
  build: { outDir: "dist", sourcemap: true, chunkSizeWarningLimit: 1200 },
});
