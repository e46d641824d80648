// webpack 5's own defaults for the web: the package's `new URL("…wasm", import.meta.url)` is
// emitted as an asset, and the "node" export condition is not taken.
import { writeFile } from "node:fs/promises";
import webpack from "webpack";

const compiler = webpack({
  mode: "production",
  target: "web",
  entry: "./src/index.js",
  output: { path: new URL("./dist", import.meta.url).pathname, clean: true, publicPath: "/" },
  // The wasm is over webpack's 244 KiB hint by design (it is gzip-budgeted upstream).
  performance: { hints: false },
});
const stats = await new Promise((resolve, reject) =>
  compiler.run((error, result) => (error ? reject(error) : compiler.close(() => resolve(result)))),
);
if (stats.hasErrors()) {
  console.error(stats.toString("errors-only"));
  process.exit(1);
}
const html = '<!doctype html><html><body><div id="root"></div><script src="/main.js"></script></body></html>';
await writeFile(new URL("./dist/index.html", import.meta.url), html);
console.log(stats.toString({ assets: true, modules: false, colors: false }));
