// @dpas/host/react: the app's one Surface in context, capabilities registered while a
// component is mounted, the conversation store as React state, and confirmations as a list a
// dialog renders. Plain JS (no build step); the types are in react.d.ts.
import {
  createContext,
  createElement,
  Fragment,
  useCallback,
  useContext,
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  useSyncExternalStore,
} from "react";
import init, { Conversation, exposeWebMcp, Surface } from "@dpas/host";
import { isStandardSchema, wireSchema } from "./schema.js";

const SurfaceContext = createContext(null);
const ConfirmationsContext = createContext(null);

// Layout effects register capabilities before paint; on a server there is no commit at all.
const useCommitEffect = typeof document === "undefined" ? useEffect : useLayoutEffect;

/** The pending confirmations of one provider: an immutable list, replaced on every change. */
function confirmationStore() {
  let items = [];
  let consumers = 0;
  const listeners = new Set();
  const resolvers = new Map();
  const publish = (next) => {
    items = next;
    for (const listener of [...listeners]) listener();
  };
  const settle = (entries, ok) => {
    const settled = new Set(entries.filter((entry) => resolvers.has(entry)));
    if (settled.size === 0) return;
    publish(items.filter((entry) => !settled.has(entry)));
    for (const entry of settled) {
      const resolve = resolvers.get(entry);
      resolvers.delete(entry);
      resolve(ok);
    }
  };
  return {
    snapshot: () => items,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** Asked by a conversation; denied at once when no dialog is mounted to answer it. */
    request(request, owner) {
      if (consumers === 0) {
        console.warn(
          `@dpas/host/react: "${request.canonicalId}" needs a confirmation, but no mounted component ` +
            "calls usePendingConfirmations() (or passes `confirm` to useConversation): it is denied.",
        );
        return Promise.resolve(false);
      }
      return new Promise((resolve) => {
        const entry = {
          ...request,
          approve: () => settle([entry], true),
          deny: () => settle([entry], false),
        };
        Object.defineProperty(entry, "owner", { value: owner, enumerable: false });
        resolvers.set(entry, resolve);
        publish([...items, entry]);
      });
    },
    denyOwner(owner) {
      settle(
        items.filter((entry) => entry.owner === owner),
        false,
      );
    },
    /** A mounted usePendingConfirmations(); when the last one goes, every pending request is
     *  denied. The check waits a microtask so StrictMode's remount does not count as one. */
    attach() {
      consumers += 1;
      return () => {
        consumers -= 1;
        queueMicrotask(() => {
          if (consumers === 0) settle(items, false);
        });
      };
    },
  };
}

/** Initialises the wasm once, creates the app's one Surface and renders `fallback` until both
 *  are ready. `executeProcedure` is read when a procedure runs, so it may change freely. */
export function SurfaceProvider({ executeProcedure, webMcp = false, fallback = null, children }) {
  const executor = useRef(executeProcedure);
  useCommitEffect(() => {
    executor.current = executeProcedure;
  });
  const [surface, setSurface] = useState(null);
  const [failure, setFailure] = useState(null);
  const [confirmations] = useState(confirmationStore);
  useEffect(() => {
    let live = true;
    let created = null;
    init().then(
      () => {
        if (!live) return;
        created = new Surface({
          executeProcedure: (path, input, context) => {
            const run = executor.current;
            if (!run) throw new Error("No executeProcedure was given to <SurfaceProvider>.");
            return run(path, input, context);
          },
        });
        setSurface(created);
      },
      (error) => {
        if (live) setFailure({ error });
      },
    );
    return () => {
      live = false;
      setSurface(null);
      // Children unregister in their own cleanups, which may run after this one.
      if (created) {
        const surface = created;
        queueMicrotask(() => surface.free());
      }
    };
  }, []);
  // WebMCP is read once, like the surface: on when asked, its confirmations the provider's.
  const webMcpOptions = useRef(webMcp);
  useEffect(() => {
    const asked = webMcpOptions.current;
    if (!surface || !asked) return undefined;
    const options = asked === true ? {} : asked;
    const owner = {};
    const stop = exposeWebMcp(surface, {
      ...options,
      confirm: options.confirm ?? ((request) => confirmations.request(request, owner)),
    });
    return () => {
      stop();
      confirmations.denyOwner(owner);
    };
  }, [surface, confirmations]);
  if (failure) throw failure.error;
  if (!surface) return createElement(Fragment, null, fallback);
  return createElement(
    SurfaceContext.Provider,
    { value: surface },
    createElement(ConfirmationsContext.Provider, { value: confirmations }, children),
  );
}

/** The provider's Surface. */
export function useSurface() {
  const surface = useContext(SurfaceContext);
  if (!surface) throw new Error("useSurface() needs a <SurfaceProvider> above it (from @dpas/host/react).");
  return surface;
}

function useConfirmations() {
  const store = useContext(ConfirmationsContext);
  if (!store) throw new Error("This hook needs a <SurfaceProvider> above it (from @dpas/host/react).");
  return store;
}

/** A Standard Schema's JSON Schema, or a marker when it has none: registering it throws the
 *  error that says why. */
function schemaShape(schema, io) {
  try {
    return wireSchema(schema, io, "");
  } catch {
    return "[unconvertible schema]";
  }
}

/** A definition's static part: everything but the functions, which only count by presence. A
 *  Standard Schema counts by its JSON Schema (converted once per schema object), so a schema
 *  written inline, a new object every render, changes nothing while it says the same. */
function shapeOf(def) {
  return JSON.stringify(def, (key, value) => {
    if (isStandardSchema(value)) return schemaShape(value, key === "inputSchema" ? "input" : "output");
    return typeof value === "function" ? "[function]" : value;
  });
}

function hasAvailability(def) {
  const lists = [def.observations, def.actions, def.procedures];
  return lists.some((list) => list?.some((item) => item.availability !== undefined || item.describe));
}

/** A definition whose functions call the latest render's, found by name (or path). */
function liveDefinition(def, latest) {
  const current = (list, key, value) => latest.current[list]?.find((item) => item[key] === value);
  const call = (find, name) => (...args) => {
    const fn = find()?.[name];
    if (typeof fn !== "function") throw new Error(`${name} is gone from the latest definition`);
    return fn(...args);
  };
  const availability = (given, find) => {
    if (!given) return given;
    const reason = given.unavailableReason;
    return {
      ...given,
      when: given.when && (() => (find()?.availability?.when?.() ?? true)),
      unavailableReason:
        typeof reason === "function"
          ? () => {
              const now = find()?.availability?.unavailableReason;
              return typeof now === "function" ? now() : now;
            }
          : reason,
    };
  };
  const item = (list, key, build) =>
    def[list]?.map((given) => {
      const find = () => current(list, key, given[key]);
      return { ...given, ...build(given, find), availability: availability(given.availability, find) };
    });
  return {
    ...def,
    observations: item("observations", "name", (_given, find) => ({ read: call(find, "read") })),
    actions: item("actions", "name", (_given, find) => ({ execute: call(find, "execute") })),
    procedures: item("procedures", "path", (given, find) => ({
      bind: given.bind && call(find, "bind"),
      describe: given.describe && (() => find()?.describe?.()),
    })),
  };
}

/** Registers `def` while the calling component is mounted (StrictMode: register, unregister,
 *  register). Handlers, `read`, `when`, `bind` and `describe` are read from the latest render,
 *  so no dependency array is needed; a changed static part (a description, a schema, `enabled`)
 *  updates the registration, a changed `type` or `instanceId` registers anew, and availability
 *  is re-evaluated after every commit. */
export function useAgentComponent(def) {
  const surface = useSurface();
  const latest = useRef(def);
  const registered = useRef(null);
  useCommitEffect(() => {
    latest.current = def;
  });
  useCommitEffect(() => {
    const shape = shapeOf(latest.current);
    const handle = surface.register(liveDefinition(latest.current, latest));
    registered.current = { handle, shape };
    return () => {
      registered.current = null;
      handle.unregister();
      handle.free();
    };
  }, [surface, def.type, def.instanceId]);
  useCommitEffect(() => {
    const current = registered.current;
    if (!current) return;
    const shape = shapeOf(def);
    if (shape !== current.shape) {
      current.shape = shape;
      current.handle.update(liveDefinition(def, latest));
    } else if (hasAvailability(def)) {
      surface.notifyAvailabilityChanged();
    }
  });
}

/** The conversation store of the calling component, created with it and freed after it. The
 *  options' functions are read from the latest render; `modelId` and `catalogMode` follow the
 *  options; `endpoint`, `threadsEndpoint` and `routeScopes` are read once. Without `confirm`,
 *  confirmation requests go to usePendingConfirmations(). */
export function useConversation(options) {
  const surface = useSurface();
  const confirmations = useConfirmations();
  const latest = useRef(options);
  useCommitEffect(() => {
    latest.current = options;
  });
  const [conversation] = useState(
    () =>
      new Conversation({
        endpoint: options.endpoint,
        threadsEndpoint: options.threadsEndpoint,
        surface,
        getPathname: () => latest.current.getPathname(),
        routeScopes: options.routeScopes,
        until: options.until && (() => latest.current.until?.() ?? true),
        confirm: (request) =>
          latest.current.confirm ? latest.current.confirm(request) : confirmations.request(request, latest),
        modelId: options.modelId,
        catalogMode: options.catalogMode,
        onEvent: (event) => latest.current.onEvent?.(event),
      }),
  );
  const mounts = useRef(0);
  useEffect(() => {
    mounts.current += 1;
    return () => {
      mounts.current -= 1;
      // StrictMode unmounts and remounts in one go: free only what stays unmounted.
      queueMicrotask(() => {
        if (mounts.current > 0) return;
        confirmations.denyOwner(latest);
        conversation.cancel();
        conversation.free();
      });
    };
  }, [conversation, confirmations]);
  useEffect(() => {
    conversation.setModelId(options.modelId);
  }, [conversation, options.modelId]);
  useEffect(() => {
    if (options.catalogMode) conversation.setCatalogMode(options.catalogMode);
  }, [conversation, options.catalogMode]);
  const subscribe = useCallback((listener) => conversation.subscribe(listener), [conversation]);
  const getState = useCallback(() => conversation.getState(), [conversation]);
  const state = useSyncExternalStore(subscribe, getState, getState);
  // A turn that ended (or was cancelled) leaves nothing to confirm.
  useEffect(() => {
    if (!state.isRunning) confirmations.denyOwner(latest);
  }, [state.isRunning, confirmations]);
  return { state, conversation };
}

/** The confirmation requests waiting for the user, each with `approve()` and `deny()`. Keep the
 *  component that calls it mounted: while none is, requests are denied, and when the last one
 *  unmounts, every pending request is denied. */
export function usePendingConfirmations() {
  const store = useConfirmations();
  useEffect(() => store.attach(), [store]);
  return useSyncExternalStore(store.subscribe, store.snapshot, store.snapshot);
}
