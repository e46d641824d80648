// One executor across tabs: the tabs of one origin that work on the same conversation (one
// group key) elect one executor with a Web Lock held for the tab's life, and talk over a
// BroadcastChannel. Only the executor runs turns and browser tools; the followers mirror its
// state (messages, running state, pending confirmations), send what their user asks to it,
// and the first in line takes over, from the stored thread, when the executor's tab closes.
// Where Web Locks or BroadcastChannel are missing (Node, old browsers) there is no group: the
// tab is its own executor.

/** Whether this environment can elect an executor among tabs. */
export function tabsSupported() {
  return typeof globalThis.BroadcastChannel === "function" && typeof globalThis.navigator?.locks?.request === "function";
}

const NAME = "@dpas/host conversation ";

function mintId() {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;
}

/** A structured-cloneable form of a thrown value. */
function errorOf(error) {
  return { name: error?.name ?? "Error", message: error?.message ?? String(error), code: error?.code };
}

function errorFrom({ name, message, code }) {
  const error = new Error(message);
  error.name = name;
  if (code !== undefined) error.code = code;
  return error;
}

const EXECUTOR_GONE =
  "The tab that ran this conversation closed before it answered; the conversation goes on in the tab that took over.";

/** The group of one conversation key. `host` is the tab's own conversation:
 *  `local()` its state, `run(op, args)` runs `send`/`cancel`/`reset`/`restore`/`resume` on it,
 *  `confirm` the app's confirmation callback (or null; asked with the request and
 *  `{signal, mirrored}`: the signal aborts when another tab answered, `mirrored` says the
 *  request is the executor's, shown in a follower), `event(e)` the app's onEvent, and
 *  `changed()` tells the tab's listeners. */
export class TabGroup {
  #host;
  #id = mintId();
  #channel;
  #role = "pending";
  #ready;
  #elected;
  #release = null;
  #stop = new AbortController();
  #closed = false;
  /** The executor's last state, as a follower last heard it. */
  #mirror = null;
  /** A new executor shows the mirror until it has restored the thread from the server. */
  #takingOver = false;
  #queued = false;
  #calls = new Map();
  /** The executor's confirmations waiting for an answer from any tab, by tool call id. */
  #asking = new Map();
  /** A follower's copies of the executor's confirmations, by tool call id. */
  #asked = new Map();
  #wasRunning = false;

  constructor(key, host) {
    this.#host = host;
    this.#ready = new Promise((resolve) => {
      this.#elected = resolve;
    });
    this.#channel = new BroadcastChannel(NAME + key);
    // Node's channel keeps the process alive unless told not to.
    this.#channel.unref?.();
    this.#channel.onmessage = (message) => this.#receive(message.data);
    const locks = globalThis.navigator.locks;
    const name = NAME + key;
    const hold = () => {
      if (this.#closed) return undefined;
      this.#becomeExecutor();
      return new Promise((resolve) => {
        this.#release = resolve;
      });
    };
    locks
      .request(name, { mode: "exclusive", ifAvailable: true }, (lock) => {
        if (lock) return hold();
        this.#role = "follower";
        this.#elected();
        this.#post({ t: "hello" });
        this.#host.changed();
        // In line for the lock: granted when the executor's tab closes.
        locks.request(name, { mode: "exclusive", signal: this.#stop.signal }, hold).catch(() => {});
        return undefined;
      })
      .catch(() => {});
  }

  /** "executor" or "follower" (a tab still being elected runs nothing yet: a follower). */
  get role() {
    return this.#role === "executor" ? "executor" : "follower";
  }

  /** Whether this tab runs the conversation's turns now. */
  get executes() {
    return this.#role === "executor";
  }

  /** The state this tab shows: its own as the executor, the executor's as a follower. */
  state() {
    if (this.#role === "executor" && !this.#takingOver) return this.#host.local();
    return this.#mirror ?? this.#host.local();
  }

  /** Runs `op` where the conversation's turns run: here as the executor, else in its tab. */
  async call(op, args = []) {
    await this.#ready;
    if (this.#role === "executor") return this.#run(op, args);
    if (op === "resume") return null;
    return new Promise((resolve, reject) => {
      const id = mintId();
      this.#calls.set(id, { op, resolve, reject });
      this.#post({ t: "call", id, op, args });
    });
  }

  /** The executor's `confirm`: its own dialog and every follower's; the first answer counts. */
  confirm(request) {
    const app = this.#host.confirm;
    if (!app) return Promise.resolve(false);
    const id = request.toolCallId;
    const controller = new AbortController();
    return new Promise((resolve) => {
      const finish = (approved) => {
        if (this.#asking.get(id)?.finish !== finish) return;
        this.#asking.delete(id);
        controller.abort();
        this.#post({ t: "confirm-done", id });
        resolve(approved);
      };
      this.#asking.set(id, { request, finish });
      this.#post({ t: "confirm", request });
      Promise.resolve(app(request, { signal: controller.signal, mirrored: false })).then(
        (answer) => finish(answer === true),
        () => finish(false),
      );
    });
  }

  /** The executor's turn events: the app's, and every follower's. */
  event(event) {
    this.#host.event(event);
    if (this.#role === "executor") this.#post({ t: "event", event });
  }

  /** The tab's own conversation changed. */
  localChanged() {
    // A follower shows the executor's state; a tab still being elected, its own.
    if (this.#role === "pending") this.#host.changed();
    if (this.#role !== "executor" || this.#takingOver) return;
    const running = this.#host.local().isRunning;
    // A turn that ended leaves nothing to confirm in any tab.
    if (this.#wasRunning && !running) for (const { finish } of [...this.#asking.values()]) finish(false);
    this.#wasRunning = running;
    this.#host.changed();
    if (this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      this.#broadcastState();
    });
  }

  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop.abort();
    this.#release?.();
    this.#channel.close();
    this.#dropAsked();
  }

  #post(message) {
    if (!this.#closed) this.#channel.postMessage({ ...message, from: this.#id });
  }

  #broadcastState() {
    if (this.#role !== "executor" || this.#takingOver) return;
    this.#post({ t: "state", state: this.#host.local(), asks: [...this.#asking.values()].map((a) => a.request) });
  }

  /** Runs `op` on this tab's own conversation. Restoring the conversation a turn is running
   *  in loads nothing that turn will not write (a tab opening asks for it). */
  #run(op, args) {
    const local = this.#host.local();
    if (op === "restore" && args[0] === local.conversationId && local.isRunning) return Promise.resolve(undefined);
    return this.#host.run(op, args);
  }

  async #becomeExecutor() {
    const wasFollower = this.#role === "follower";
    this.#role = "executor";
    this.#elected();
    this.#failCalls();
    this.#dropAsked();
    this.#post({ t: "executor" });
    const mirror = this.#mirror;
    if (wasFollower && mirror && mirror.messages.length > 0) {
      // The conversation goes on from its stored thread; until it is loaded the tab shows what
      // it mirrored.
      this.#takingOver = true;
      this.#host.changed();
      try {
        await this.#host.run("restore", [mirror.conversationId]);
      } catch (error) {
        console.warn(`@dpas/host: taking over the conversation ${mirror.conversationId} failed: ${error?.message ?? error}`);
      }
      this.#takingOver = false;
      this.#mirror = null;
      this.#wasRunning = this.#host.local().isRunning;
      this.#host.changed();
      this.#broadcastState();
      // A browser call the old executor left unanswered (a confirmation) is asked here.
      this.#host.run("resume", []).catch((error) => console.warn("@dpas/host: resuming the turn failed:", error));
      return;
    }
    this.#mirror = null;
    this.#wasRunning = this.#host.local().isRunning;
    this.#host.changed();
    this.#broadcastState();
  }

  /** Forwarded calls whose executor is gone: a turn ends with an error, the rest reject. */
  #failCalls() {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const { op, resolve, reject } of calls) {
      if (op === "send") {
        resolve({ status: "error", messages: [], error: { code: "TRANSPORT_FAILED", message: EXECUTOR_GONE } });
      } else {
        reject(new Error(EXECUTOR_GONE));
      }
    }
  }

  #dropAsked() {
    for (const controller of this.#asked.values()) controller.abort();
    this.#asked.clear();
  }

  #receive(message) {
    if (this.#closed || message === null || typeof message !== "object") return;
    if (this.#role === "executor") {
      this.#receiveAsExecutor(message);
    } else {
      this.#receiveAsFollower(message);
    }
  }

  #receiveAsExecutor(message) {
    switch (message.t) {
      case "hello":
        this.#broadcastState();
        break;
      case "call":
        Promise.resolve()
          .then(() => this.#run(message.op, message.args))
          .then(
            (value) => this.#post({ t: "reply", to: message.from, id: message.id, ok: true, value }),
            (error) => this.#post({ t: "reply", to: message.from, id: message.id, ok: false, error: errorOf(error) }),
          );
        break;
      case "confirm-answer":
        this.#asking.get(message.id)?.finish(message.approved === true);
        break;
      default:
        break;
    }
  }

  #receiveAsFollower(message) {
    switch (message.t) {
      case "state": {
        this.#mirror = message.state;
        const asks = new Set();
        for (const request of message.asks ?? []) {
          asks.add(request.toolCallId);
          this.#ask(request);
        }
        for (const [id, controller] of this.#asked) {
          if (!asks.has(id)) {
            controller.abort();
            this.#asked.delete(id);
          }
        }
        this.#host.changed();
        break;
      }
      case "event":
        this.#host.event(message.event);
        break;
      case "confirm":
        this.#ask(message.request);
        break;
      case "confirm-done":
        this.#asked.get(message.id)?.abort();
        this.#asked.delete(message.id);
        break;
      case "reply": {
        if (message.to !== this.#id) break;
        const call = this.#calls.get(message.id);
        if (!call) break;
        this.#calls.delete(message.id);
        if (message.ok) call.resolve(message.value);
        else call.reject(errorFrom(message.error));
        break;
      }
      case "executor":
        // Another tab took over: what was sent to the one before will not be answered.
        this.#failCalls();
        this.#dropAsked();
        break;
      default:
        break;
    }
  }

  /** Shows the executor's confirmation here too; an answer goes back to the executor. */
  #ask(request) {
    const app = this.#host.confirm;
    const id = request.toolCallId;
    if (!app || this.#asked.has(id)) return;
    const controller = new AbortController();
    this.#asked.set(id, controller);
    Promise.resolve(app(request, { signal: controller.signal, mirrored: true })).then(
      (answer) => {
        if (controller.signal.aborted) return;
        this.#asked.delete(id);
        this.#post({ t: "confirm-answer", id, approved: answer === true });
      },
      () => {},
    );
  }
}
