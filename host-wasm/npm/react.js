// @dpas/host/react: the app's one Surface in context, capabilities registered while a
// component is mounted, the conversation store as React state (restored after a reload, one
// executor across tabs), confirmations as a list a dialog renders, and a conversation's server
// approvals. Plain JS (no build step); the types are in react.d.ts.
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
import init, { ApprovalError, Conversation, exposeWebMcp, Surface } from "@dpas/host";
import { isStandardSchema, wireSchema } from "./schema.js";

const SurfaceContext = createContext(null);
const ConfirmationsContext = createContext(null);
/** The provider's `tabs`: whether its conversations elect one executor across tabs. */
const TabsContext = createContext(true);

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
  // Another tab's request (`mirrored`) is answered by this tab's user or there, never denied
  // here for want of a dialog.
  const mirroredEntries = new WeakSet();
  const mine = (entry) => !mirroredEntries.has(entry);
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
    /** Asked by a conversation; denied at once when no dialog is mounted to answer it. A
     *  request whose `signal` aborts (another tab answered it) leaves the list unanswered; one
     *  `mirrored` from the executor's tab stays listed until a dialog answers it. */
    request(request, owner, { signal, mirrored = false } = {}) {
      if (signal?.aborted) return Promise.resolve(false);
      if (consumers === 0 && !mirrored) {
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
        if (mirrored) mirroredEntries.add(entry);
        resolvers.set(entry, resolve);
        publish([...items, entry]);
        signal?.addEventListener("abort", () => settle([entry], false), { once: true });
      });
    },
    denyOwner(owner) {
      settle(
        items.filter((entry) => entry.owner === owner && mine(entry)),
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
          if (consumers === 0) settle(items.filter(mine), false);
        });
      };
    },
  };
}

/** Initialises the wasm once, creates the app's one Surface and renders `fallback` until both
 *  are ready. `executeProcedure` is read when a procedure runs, so it may change freely. */
export function SurfaceProvider({ executeProcedure, webMcp = false, tabs = true, fallback = null, children }) {
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
    createElement(
      ConfirmationsContext.Provider,
      { value: confirmations },
      createElement(TabsContext.Provider, { value: tabs !== false }, children),
    ),
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

/** localStorage, or nothing where there is none or it refuses (a server, a locked-down browser). */
const stored = {
  get(key) {
    try {
      return globalThis.localStorage?.getItem(key) ?? null;
    } catch {
      return null;
    }
  },
  set(key, value) {
    try {
      if (value === null) globalThis.localStorage?.removeItem(key);
      else globalThis.localStorage?.setItem(key, value);
    } catch {
      // Not kept: the next load starts a new conversation.
    }
  },
};

/** Restores the conversation last kept under `key` (once per store), and keeps the id of the
 *  one on screen once it has a message; a new, empty conversation forgets it. */
function useRestoredConversation(conversation, state, key) {
  const started = useRef(false);
  const inFlight = useRef(false);
  const [restoring, setRestoring] = useState(() => key !== null && stored.get(key) !== null);
  useEffect(() => {
    if (key === null || started.current) return;
    started.current = true;
    const id = stored.get(key);
    if (id === null) return;
    inFlight.current = true;
    conversation.restore(id).then(
      () => {
        inFlight.current = false;
        setRestoring(false);
        // A browser call the reload left unanswered (one waiting for the user's confirmation)
        // is asked again, and the turn goes on.
        conversation.resume().catch((error) => console.warn("@dpas/host/react: resuming the turn failed:", error));
      },
      (error) => {
        inFlight.current = false;
        // Gone, or another user's: start afresh rather than fail the same way on every load.
        stored.set(key, null);
        console.warn(`@dpas/host/react: the last conversation (${id}) could not be restored: ${error?.message ?? error}`);
        setRestoring(false);
      },
    );
  }, [conversation, key]);
  useEffect(() => {
    if (key === null || inFlight.current) return;
    stored.set(key, state.messages.length > 0 ? state.conversationId : null);
  }, [key, state.conversationId, state.messages.length]);
  return restoring;
}

/** The conversation store of the calling component, created with it and freed after it. The
 *  options' functions are read from the latest render; `modelId` and `catalogMode` follow the
 *  options; `endpoint`, `threadsEndpoint`, `routeScopes`, `restore`, `storageKey` and `tabs`
 *  are read once. Without `confirm`, confirmation requests go to usePendingConfirmations().
 *  Unless `restore` is false, the conversation on screen is restored after a reload. Unless
 *  `tabs` (or the provider's) is false, the tabs on one storage key share one executor
 *  (tabs.js): a follower's store mirrors it, and unmounting a follower leaves its turn running. */
export function useConversation(options) {
  const surface = useSurface();
  const confirmations = useConfirmations();
  const tabsAllowed = useContext(TabsContext);
  const latest = useRef(options);
  useCommitEffect(() => {
    latest.current = options;
  });
  const [storageKey] = useState(() =>
    options.restore === false
      ? null
      : (options.storageKey ?? `@dpas/host:conversation ${options.threadsEndpoint ?? "/api/threads"} ${options.endpoint}`),
  );
  const [conversation] = useState(
    () =>
      new Conversation({
        endpoint: options.endpoint,
        threadsEndpoint: options.threadsEndpoint,
        surface,
        getPathname: () => latest.current.getPathname(),
        routeScopes: options.routeScopes,
        until: options.until && (() => latest.current.until?.() ?? true),
        confirm: (request, asked) =>
          latest.current.confirm ? latest.current.confirm(request, asked) : confirmations.request(request, latest, asked),
        modelId: options.modelId,
        catalogMode: options.catalogMode,
        onEvent: (event) => latest.current.onEvent?.(event),
        // The tabs on one conversation key (the kept id's, by default) share one executor.
        tabs:
          tabsAllowed && options.tabs !== false
            ? { key: options.tabs?.key ?? storageKey ?? `${options.threadsEndpoint ?? "/api/threads"} ${options.endpoint}` }
            : false,
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
        // A follower's turn is the executor's: it goes on there.
        if (conversation.getState().tabRole === "executor") conversation.cancel();
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
  const restoring = useRestoredConversation(conversation, state, storageKey);
  return { state, conversation, restoring };
}

/** The confirmation requests waiting for the user, each with `approve()` and `deny()`. Keep the
 *  component that calls it mounted: while none is, requests are denied, and when the last one
 *  unmounts, every pending request is denied. */
export function usePendingConfirmations() {
  const store = useConfirmations();
  useEffect(() => store.attach(), [store]);
  return useSyncExternalStore(store.subscribe, store.snapshot, store.snapshot);
}

const NO_APPROVALS = Object.freeze([]);

/** One request to the approvals API: its JSON, or an ApprovalError with the answer's code. */
async function approvalsRequest(url, init) {
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin", ...init });
  } catch (error) {
    throw new ApprovalError("TRANSPORT_FAILED", `Could not reach ${url}: ${error?.message ?? error}`);
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: said below.
  }
  const error = body?.error;
  if (!response.ok || body === null) {
    if (typeof error?.code === "string" && typeof error?.message === "string") {
      throw new ApprovalError(error.code, error.message, response.status);
    }
    throw new ApprovalError("TRANSPORT_FAILED", `${url} answered HTTP ${response.status}.`, response.status);
  }
  return body;
}

/** The approval ids a conversation's server calls were answered with, as one string. */
function requestedApprovals(messages) {
  const ids = [];
  for (const message of messages) {
    for (const call of message.toolCalls) {
      if (call.executor === "server" && call.result?.status === "approval-required") ids.push(call.result.approvalId);
    }
  }
  return ids.join(" ");
}

/** The pending server approvals of `conversation` (from useConversation), listed again when it
 *  changes (a restore, a reset) and when one of its steps is answered `approval-required`;
 *  `approve` and `deny` decide through the server and keep the decision's receipt. After a
 *  decision the thread is restored, when no turn runs, so that it shows the receipt the server
 *  appended and the next turn sends it. */
export function useApprovals(conversation, options = {}) {
  const endpoint = options.endpoint ?? "/api/approvals";
  const subscribe = useCallback((listener) => conversation.subscribe(listener), [conversation]);
  const getState = useCallback(() => conversation.getState(), [conversation]);
  const state = useSyncExternalStore(subscribe, getState, getState);
  const { conversationId } = state;
  const empty = state.messages.length === 0;
  const requested = requestedApprovals(state.messages);
  // What the list was read for: the conversation and the approvals its calls had asked for.
  const key = `${conversationId} ${requested}`;
  const [list, setList] = useState({ key: null, conversationId: null, approvals: NO_APPROVALS, error: undefined });
  const [decisions, setDecisions] = useState(() => new Map());
  const [deciding, setDeciding] = useState(() => new Set());
  const ticket = useRef(0);
  const live = useRef(true);
  useEffect(() => {
    live.current = true;
    return () => {
      live.current = false;
    };
  }, []);

  const refresh = useCallback(async () => {
    const mine = ++ticket.current;
    const now = conversation.getState();
    const id = now.conversationId;
    const key = `${id} ${requestedApprovals(now.messages)}`;
    try {
      const approvals = await approvalsRequest(`${endpoint}?conversationId=${encodeURIComponent(id)}`);
      if (live.current && mine === ticket.current) setList({ key, conversationId: id, approvals, error: undefined });
    } catch (error) {
      if (live.current && mine === ticket.current) {
        setList((last) => ({
          key,
          conversationId: id,
          approvals: last.conversationId === id ? last.approvals : NO_APPROVALS,
          error,
        }));
      }
    }
  }, [conversation, endpoint]);

  useEffect(() => {
    // A conversation with no message yet has asked for nothing.
    if (!empty) void refresh();
  }, [conversationId, empty, requested, refresh]);

  const decide = useCallback(
    async (approvalId, approved) => {
      const threadId = conversation.getState().conversationId;
      setDeciding((now) => new Set(now).add(approvalId));
      try {
        const answer = await approvalsRequest(`${endpoint}/${encodeURIComponent(approvalId)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ approved, threadId }),
        });
        const decision = { approvalId, approved, receipt: answer.receipt, resolution: answer.resolution };
        if (live.current) setDecisions((now) => new Map(now).set(approvalId, decision));
        const after = conversation.getState();
        if (!after.isRunning && after.conversationId === threadId) {
          await conversation.restore(threadId).catch((error) => {
            console.warn(`@dpas/host/react: the thread could not be reloaded after the decision: ${error?.message ?? error}`);
          });
        }
        await refresh();
        return decision;
      } catch (error) {
        // Decided elsewhere (another tab): the list says how it stands now.
        if (error instanceof ApprovalError && error.status === 409) void refresh();
        throw error;
      } finally {
        if (live.current) {
          setDeciding((now) => {
            const next = new Set(now);
            next.delete(approvalId);
            return next;
          });
        }
      }
    },
    [conversation, endpoint, refresh],
  );
  const approve = useCallback((approvalId) => decide(approvalId, true), [decide]);
  const deny = useCallback((approvalId) => decide(approvalId, false), [decide]);
  const decision = useCallback((approvalId) => decisions.get(approvalId), [decisions]);
  const isDeciding = useCallback((approvalId) => deciding.has(approvalId), [deciding]);

  const same = list.conversationId === conversationId;
  return {
    approvals: empty || !same ? NO_APPROVALS : list.approvals,
    loaded: empty || (list.key === key && list.error === undefined),
    error: same ? list.error : undefined,
    approve,
    deny,
    decision,
    isDeciding,
    refresh,
  };
}
