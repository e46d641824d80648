import { createContext, useContext, useState } from "react";
import type { ToolCallMessagePartProps } from "@assistant-ui/react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import type { UseApprovalsResult } from "@dpas/host/react";
import { getApproval, type ApprovalTarget } from "../api";
import type { DpasToolArtifact } from "@dpas/host/assistant-ui";
import { formatEur } from "../format";

/** The dock's conversation's approvals (useApprovals), for its tool cards. */
export const DockContext = createContext<UseApprovalsResult | null>(null);

interface ApprovalRequired {
  status: "approval-required";
  approvalId: string;
  message?: string;
}

function approvalOf(result: unknown): ApprovalRequired | null {
  if (result && typeof result === "object" && (result as { status?: unknown }).status === "approval-required") {
    const r = result as ApprovalRequired;
    if (typeof r.approvalId === "string") return r;
  }
  return null;
}

export function ToolCard(props: ToolCallMessagePartProps) {
  const artifact = props.artifact as DpasToolArtifact | undefined;
  const canonicalId = artifact?.canonicalId ?? props.toolName;
  const plane = canonicalId.startsWith("view:") ? "view" : canonicalId.startsWith("domain:") ? "domain" : "host";
  const state = artifact?.state ?? (props.result === undefined ? "running" : props.isError ? "error" : "done");
  const approval = approvalOf(props.result);
  const [open, setOpen] = useState(false);
  return (
    <div className={`tool-card plane-${plane} state-${state}`} data-tool-card={canonicalId} data-wire-name={artifact?.wireName}>
      <div className="tool-head">
        <span className="plane">{plane}</span>
        <code className="tool-id">{canonicalId}</code>
        <span className="tool-where muted">{artifact?.executor === "browser" ? "in this browser" : "on the server"}</span>
        <span className={`tool-state ${state}`}>
          {approval ? "awaiting approval" : state === "running" ? "running…" : state === "error" ? "failed" : "done"}
        </span>
        <button type="button" className="link" aria-expanded={open} onClick={() => setOpen((v) => !v)}>
          {open ? "Hide details" : "Details"}
        </button>
      </div>
      {open && (
        <div className="tool-body">
          <div className="muted">input</div>
          <pre className="json">{props.argsText || JSON.stringify(props.args ?? {})}</pre>
          {props.result !== undefined && (
            <>
              <div className="muted">result</div>
              <pre className="json">{JSON.stringify(props.result, null, 2)}</pre>
            </>
          )}
        </div>
      )}
      {approval && <ApprovalCard approval={approval} canonicalId={canonicalId} input={props.args} />}
    </div>
  );
}

/** The approval's target as it was when requested: what the decision is about. */
export function ApprovalTargetLine({ target }: { target: ApprovalTarget }) {
  return (
    <p className="approval-target" data-testid="approval-target">
      {target.reference} · {target.client} · {typeof target.amount === "number" ? formatEur(target.amount) : "?"} ·{" "}
      {target.status}
      {target.dueDate ? ` · due ${target.dueDate}` : ""}
    </p>
  );
}

function ApprovalCard({
  approval,
  canonicalId,
  input,
}: {
  approval: ApprovalRequired;
  canonicalId: string;
  input: unknown;
}) {
  const approvals = useContext(DockContext);
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const id = approval.approvalId;
  const pending = approvals?.approvals.find((a) => a.id === id);
  const decision = approvals?.decision(id);
  // Not pending once the conversation's list is in: decided before (a reload, another tab).
  const decidedBefore = !decision && !pending && approvals?.loaded === true;
  const record = useQuery({
    queryKey: ["approval", id],
    queryFn: () => getApproval(id),
    enabled: decidedBefore,
  });
  const target = (pending?.target ?? record.data?.target) as ApprovalTarget | null | undefined;

  const decide = async (approved: boolean) => {
    if (!approvals) return;
    setError(null);
    try {
      const result = await (approved ? approvals.approve : approvals.deny)(id);
      if (result.resolution.status === "completed") await queryClient.invalidateQueries();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  return (
    <div className="approval-card" role="group" aria-label="Approval required">
      <p>
        <strong>Approval required.</strong> {approval.message ?? `The assistant asked to run ${canonicalId}.`}
      </p>
      {target && <ApprovalTargetLine target={target} />}
      <pre className="json">{JSON.stringify(input ?? {}, null, 2)}</pre>
      {decision ? (
        <p className={decision.receipt.ok ? "receipt ok" : "receipt failed"} role="status">
          {decision.receipt.text}
        </p>
      ) : decidedBefore ? (
        <p className="receipt" role="status">
          {record.data?.decision?.status === "approved" ? "Approved" : record.data?.status === "rejected" ? "Denied" : `Status: ${record.data?.status ?? "decided"}`}
          {record.data?.decision?.approver ? ` by ${record.data.decision.approver}` : ""}.
          {record.data?.message ? ` ${record.data.message}` : ""}
        </p>
      ) : (
        <DecisionButtons
          busy={!approvals || approvals.isDeciding(id) || (!pending && !approvals.error)}
          decide={decide}
        />
      )}
      {error && <p role="alert">{error}</p>}
    </div>
  );
}

/** Deny and Approve for a pending approval (the dock's card and the `/approvals/:id` page). */
export function DecisionButtons({ busy, decide }: { busy: boolean; decide: (approved: boolean) => Promise<void> }) {
  return (
    <div className="dialog-actions">
      <button type="button" disabled={busy} onClick={() => void decide(false)}>
        Deny
      </button>
      <button type="button" className="primary" disabled={busy} onClick={() => void decide(true)}>
        Approve
      </button>
    </div>
  );
}
