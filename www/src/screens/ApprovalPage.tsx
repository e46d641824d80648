import { useState } from "react";
import { useParams } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { decideApproval, getApproval, type ApprovalDecision } from "../api";
import { ApprovalTargetLine, DecisionButtons } from "../assistant/ToolCard";
import { usePageTitle } from "./usePageTitle";

/** `/approvals/:id`: the deep link an MCP client hands its user. The card of the user's own
 *  request, with Approve and Deny while it is pending. Deciding runs nothing for an MCP
 *  request: the client that asked runs it with `approvals_resume`. */
export function ApprovalPage() {
  const { id = "" } = useParams();
  usePageTitle("/approvals");
  const queryClient = useQueryClient();
  const card = useQuery({ queryKey: ["approval", id], queryFn: () => getApproval(id) });
  const [receipt, setReceipt] = useState<ApprovalDecision["receipt"] | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const decide = async (approved: boolean) => {
    setBusy(true);
    setError(null);
    try {
      const result = await decideApproval(id, approved);
      setReceipt(result.receipt);
      await queryClient.invalidateQueries();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  if (card.isPending) return <p className="loading">Loading…</p>;
  if (card.error) return <p role="alert">{String(card.error)}</p>;
  const data = card.data;
  if (!data) {
    return (
      <section className="approval-page">
        <h1>Approval</h1>
        <p role="status">No approval request of yours has this id.</p>
      </section>
    );
  }
  return (
    <section className="approval-page">
      <h1>Approval</h1>
      <div className="approval-card" role="group" aria-label="Approval request">
        <p>
          <strong>{data.capabilityId}</strong> asked from <strong>{data.surface === "mcp" ? "an MCP client" : data.surface}</strong>{" "}
          · risk {data.risk} · <span data-testid="approval-status">{data.status}</span>
        </p>
        <ul>
          {data.reasons.map((r) => (
            <li key={r}>{r}</li>
          ))}
        </ul>
        {data.target && <ApprovalTargetLine target={data.target} />}
        {data.message && <p className="muted">{data.message}</p>}
        <pre className="json">{JSON.stringify(data.input ?? {}, null, 2)}</pre>
        <p className="muted">
          Requested {new Date(data.requestedAt).toLocaleString()} · expires {new Date(data.expiresAt).toLocaleString()}
        </p>
        {receipt ? (
          <p className={receipt.ok ? "receipt ok" : "receipt failed"} role="status">
            {receipt.text}
          </p>
        ) : data.status === "pending" ? (
          <DecisionButtons busy={busy} decide={decide} />
        ) : (
          data.decision && (
            <p className="receipt" role="status">
              {data.decision.status === "approved" ? "Approved" : "Denied"} by {data.decision.approver}.
            </p>
          )
        )}
        {error && <p role="alert">{error}</p>}
      </div>
    </section>
  );
}
