// node server.mjs: the todo backend on TODO_LISTEN (default 127.0.0.1:3000), in front of
// host-server at HOST_SERVER_URL (default http://127.0.0.1:8080). DPAS_JWT_SECRET (at least
// 32 bytes) signs the sign-in's tokens; host-server checks them with the same secret.
import { createBackend } from "./backend.mjs";

const [host, port] = (process.env.TODO_LISTEN ?? "127.0.0.1:3000").split(/:(?=\d+$)/);
let backend;
try {
  backend = createBackend({
    secret: process.env.DPAS_JWT_SECRET,
    upstream: process.env.HOST_SERVER_URL ?? "http://127.0.0.1:8080",
  });
} catch (error) {
  console.error(`todo-backend: ${error.message}`);
  process.exit(2);
}
backend.server.listen(Number(port), host, () => {
  const { address, port } = backend.server.address();
  console.log(`todo-backend on http://${address}:${port}, host-server at ${backend.upstream}`);
});
