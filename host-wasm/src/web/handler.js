// callHandler: see its declaration in surface.rs.
export function callHandler(f, args, context, ms, turn) {
  const controller = new AbortController();
  context.signal = controller.signal;
  return new Promise((resolve, reject) => {
    let timer;
    const settle = (done) => (value) => {
      clearTimeout(timer);
      turn?.removeEventListener("abort", cancelled);
      done(value);
    };
    const abandon = (code, retry, message) => {
      const error = Object.assign(new Error(message), { code, retry });
      controller.abort(error);
      settle(reject)(error);
    };
    function cancelled() {
      abandon("CANCELLED", "no", "The turn was cancelled while this call was running; it may or may not have happened.");
    }
    if (turn?.aborted) return cancelled();
    let value;
    try {
      value = f(...args, context);
    } catch (error) {
      return reject(error);
    }
    if (typeof value?.then != "function") return resolve(value);
    if (turn?.aborted) return cancelled();
    turn?.addEventListener("abort", cancelled);
    timer = setTimeout(() => abandon("TIMEOUT", "after-refresh",
      `The call did not finish within ${ms} ms and was abandoned; it may or may not have happened. Refresh and check before retrying.`), ms);
    Promise.resolve(value).then(settle(resolve), settle(reject));
  });
}

// askConfirm: see its declaration in turn.rs.
export function askConfirm(confirm, request, turn) {
  let answer = Promise.resolve(confirm(request));
  if (turn) {
    answer = Promise.race([answer, new Promise((resolve) => {
      if (turn.aborted) return resolve(false);
      turn.addEventListener("abort", () => resolve(false));
    })]);
  }
  return answer.then((value) => value === true, () => false);
}

// yieldTask: see its declaration in platform.rs.
export function yieldTask() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

// listeners: see its declaration in conversation.rs.
export function listeners() {
  let entries = [];
  return {
    add(f) {
      const entry = { f };
      // A new array, never one changed in place: a notify under way keeps its own.
      entries = [...entries, entry];
      return () => {
        entries = entries.filter((e) => e !== entry);
      };
    },
    notify() {
      for (const { f } of entries) {
        try {
          f();
        } catch {}
      }
    },
  };
}

// sendRequest: see its declaration in platform.rs.
export function sendRequest(url, body, signal) {
  const init = { credentials: "include" };
  if (body) {
    init.method = "POST";
    init.headers = { "content-type": "application/json" };
    init.body = body;
  }
  if (signal) init.signal = signal;
  return fetch(new Request(url, init));
}
