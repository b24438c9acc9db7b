"""Error codes the pipeline returns. ARCHITECTURE.md names the first six; they are contracts."""

NOT_OFFERED = "tool.not_found.not_offered"
ARGUMENTS_INVALID = "tool.arguments_invalid"
DENIED_POLICY = "tool.denied.policy"
DENIED_HARDLINE = "tool.denied.hardline"
DENIED_APPROVAL = "tool.denied.approval"
PIN_MISMATCH = "tool_pin_mismatch"

# Beyond the contract: failures after a call was allowed.
UNAVAILABLE = "tool.unavailable"  # no implementation here, or its server is down
EXECUTION_FAILED = "tool.execution_failed"  # the tool raised or reported an error
OUTCOME_UNKNOWN = "tool.outcome_unknown"  # interrupted mid-call; a write is never re-run
TIMEOUT = "tool.timeout"
# A call whose id an earlier call of the chat, of another tool or with other arguments, already has:
# refused, never run, never answered with the other call's result (the model must use an id of its own).
CALL_ID_REUSED = "tool.call_id_reused"
# A network tool refused a destination that is not on the public internet (core/net/guard.py).
DENIED_PRIVATE_ADDRESS = "tool.denied.private_address"

CONTRACT_CODES = (NOT_OFFERED, ARGUMENTS_INVALID, DENIED_POLICY, DENIED_HARDLINE, DENIED_APPROVAL, PIN_MISMATCH)
