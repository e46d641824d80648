#!/usr/bin/env bash
# The packed @dpas/host as users install it, in the apps of tests/packaging/: a Vite 8 + React
# app (strict types with skipLibCheck off, zod-typed capabilities and what must not compile, a
# production build, a vitest + jsdom component test, a turn in headless Chromium), the same with
# @assistant-ui/react and @dpas/host/assistant-ui's three-line chat (its strict types, a build, a
# turn in Chromium), a plain Node script that must end by itself after a turn and zod-typed
# actions in Node, Vite 6 (the README's dev-server recipe, and a build), Next.js 16 (the README's
# client-component recipe) and a webpack 5 build, loaded in Chromium. Only the assistant-ui
# fixture installs @assistant-ui/react: the others check the package without it.
#   SKIP_BUILD=1 reuses host-wasm/pkg and host-wasm/dist/dpas-host.tgz (test.sh, after e2e.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[packaging]\033[0m %s\n' "$*"; }
. scripts/lib/package.sh

ready_host

app=tests/packaging/vite-react
say "$app: install, tsc (strict, skipLibCheck false, lib ES2022 + DOM; src/typed: zod-typed handlers, and what must not compile), vite build"
install_host "$app"
(cd "$app" && npm run --silent typecheck && npm run --silent build)
say "$app: vitest + jsdom (init in Node, a turn against a stub server)"
(cd "$app" && npm run --silent test:unit)
say "$app: the built app in headless Chromium"
(cd "$app" && npm run --silent test:browser)

# An app whose own `npm test` is the whole check: installed, then run.
npm_test_app() {
  say "$1: $2"
  install_host "$1"
  (cd "$1" && npm test --silent)
}
npm_test_app tests/packaging/assistant-ui "@dpas/host/assistant-ui's chat with @assistant-ui/react: tsc (strict, skipLibCheck false), vite build, a turn in headless Chromium"
npm_test_app tests/packaging/node "a plain Node script runs a turn against a stub server and ends by itself; zod-typed actions validate the model's input"
npm_test_app tests/packaging/vite6 "Vite 6's dev server with and without the README's recipe, and its build, in headless Chromium"
npm_test_app tests/packaging/nextjs "Next.js 16 (app router): the README's client-component recipe, built, started, in headless Chromium"

app=tests/packaging/webpack
say "$app: install, webpack 5 production build, loaded in headless Chromium"
install_host "$app"
(cd "$app" && npm run --silent build >/dev/null && npm run --silent test:browser)
say "ok"
