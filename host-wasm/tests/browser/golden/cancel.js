// The package's Conversation (the npm entry, index.js) stopped mid-step against the real
// /agent/chat: the model (golden/silent.json) streams a little text and then nothing, so the
// server's step runs until something stops it. `cancel()` aborts the turn's fetch and asks
// the server to stop the step; the server's run ends and stores the step in the thread.
import init, { Surface, Conversation } from "/pkg/index.js";
import { signIn } from "/session.js";

const waitFor = (conversation, holds) =>
  new Promise((resolve) => {
    const check = () => {
      if (!holds(conversation.getState())) return;
      unsubscribe();
      resolve();
    };
    const unsubscribe = conversation.subscribe(check);
    check();
  });

window.runCancel = async () => {
  await init();
  await signIn();
  const conversation = new Conversation({
    endpoint: "/agent/chat",
    surface: new Surface(),
    getPathname: () => location.pathname,
  });
  const sent = conversation.send("Which invoices are overdue?");
  await waitFor(conversation, (s) => s.messages.some((m) => m.role === "assistant" && m.text.includes("Looking")));
  conversation.cancel();
  const result = await sent;
  // The server stores the step when its run ends: at once after the cancel, long before the
  // model's 45 s timeout would end it. Read the thread until it is there (10 s at most).
  const id = conversation.getState().conversationId;
  const deadline = performance.now() + 10_000;
  let stored;
  for (;;) {
    stored = await fetch(`/api/threads/${encodeURIComponent(id)}/model-messages`, { credentials: "include" });
    if (stored.ok || performance.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { status: result.status, storedStatus: stored.status, stored: stored.ok ? await stored.json() : null };
};
