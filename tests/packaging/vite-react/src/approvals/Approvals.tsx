// Type-checked only (tsc): the approval kit as an app writes it. A tool call's result is typed
// by its executor and state, `toolCallPhase` says what it waits for, and `useApprovals` decides.
import { ApprovalError, toolCallPhase, type ApprovalDecision, type ToolCallView } from "@dpas/host";
import { useApprovals, useConversation, usePendingConfirmations } from "@dpas/host/react";

function approvalIdOf(call: ToolCallView): string | undefined {
  // @ts-expect-error: `result` is a union until executor and state say which one.
  void call.result.status;
  if (call.executor === "server" && call.state === "done" && call.result.status === "approval-required") {
    return call.result.approvalId;
  }
  if (call.executor === "server" && call.state === "error" && call.result && "status" in call.result) {
    const retryable: boolean = call.result.error.retryable;
    void retryable;
  }
  return undefined;
}

function Call({ call, decide }: { call: ToolCallView; decide: (id: string) => Promise<ApprovalDecision> }) {
  const confirmations = usePendingConfirmations();
  const phase = toolCallPhase(call, { confirmations });
  switch (phase.phase) {
    case "running":
      return <span>running</span>;
    case "awaiting-confirmation":
      return <span>confirm {phase.confirmation.canonicalId}</span>;
    case "awaiting-approval":
      return <button onClick={() => void decide(phase.approvalId)}>Approve {phase.card?.capabilityId}</button>;
    case "decided":
      return <span>{phase.decision?.receipt.text}</span>;
    case "done":
      return <span>{JSON.stringify(phase.output)}</span>;
    case "failed":
      return <span>{phase.error.code}</span>;
  }
}

export function Approvals() {
  const { state, conversation, restoring } = useConversation({
    endpoint: "/agent/chat",
    getPathname: () => location.pathname,
    storageKey: "fixture conversation of ada",
  });
  const approvals = useApprovals(conversation);
  const decide = (id: string) =>
    approvals.approve(id).catch((e: unknown) => {
      if (e instanceof ApprovalError && e.code === "APPROVAL_CONSUMED") return approvals.deny(id);
      throw e;
    });
  const calls = state.messages.flatMap((m) => m.toolCalls);
  return (
    <div aria-busy={restoring || !approvals.loaded}>
      {approvals.error && <p role="alert">{approvals.error.code}</p>}
      {approvals.approvals.map((card) => (
        <p key={card.id}>
          {card.capabilityId} in {card.conversationId}: {card.status}
        </p>
      ))}
      {calls.map((call) => (
        <Call key={call.toolCallId} call={call} decide={decide} />
      ))}
      <span hidden>{calls.map(approvalIdOf).join(" ")}</span>
    </div>
  );
}
