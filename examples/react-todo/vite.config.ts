import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` answers the app and hands the API to todo-server (examples/todo-server),
// started on its default address, or to DPAS_API (examples/todo-backend: http://127.0.0.1:3000).
// The object form keeps the page's Host (the string form rewrites it to the target's), so the
// server's same-origin check of writes sees the page's own origin.
const server = { target: process.env.DPAS_API ?? "http://127.0.0.1:8080" };
// One chunk of ~600 KB (React, assistant-ui, the package's glue): above Vite's 500 KB warning.
export default defineConfig({
  plugins: [react()],
  build: { chunkSizeWarningLimit: 800 },
  server: { proxy: { "/api": server, "/rpc": server, "/agent": server } },
});
