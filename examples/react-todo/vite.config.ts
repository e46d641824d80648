import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` answers the app and hands the API to todo-server (examples/todo-server),
// started on its default address.
const server = "http://127.0.0.1:8080";
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": server, "/rpc": server, "/agent": server } },
});
