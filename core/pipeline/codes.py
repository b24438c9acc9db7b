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
STOPPED = "tool.stopped"  # the owner stopped the turn before the call ran (or while a read ran)
TIMEOUT = "tool.timeout"
# A call whose id an earlier call of the chat, of another tool or with other arguments, already has:
# refused, never run, never answered with the other call's result (the model must use an id of its own).
CALL_ID_REUSED = "tool.call_id_reused"
# A network tool refused a destination that is not on the public internet (core/net/guard.py).
DENIED_PRIVATE_ADDRESS = "tool.denied.private_address"

CONTRACT_CODES = (NOT_OFFERED, ARGUMENTS_INVALID, DENIED_POLICY, DENIED_HARDLINE, DENIED_APPROVAL, PIN_MISMATCH)

# What each code means to the owner, in one clause: the row of a call shows it, and the raw
# code goes in the detail (every presentation uses the same words; see describe).
_SENTENCES: dict[str, str] = {
    NOT_OFFERED: "the model asked for a tool this chat does not offer",
    ARGUMENTS_INVALID: "the arguments do not fit the tool's schema",
    DENIED_POLICY: "your tool policy does not allow it",
    DENIED_HARDLINE: "a hardline rule forbids it",
    DENIED_APPROVAL: "you did not approve it",
    PIN_MISMATCH: "the tool changed since this chat pinned its plan",
    UNAVAILABLE: "the tool is not available (no implementation here, or its server is down)",
    EXECUTION_FAILED: "the tool reported an error",
    OUTCOME_UNKNOWN: "interrupted while it ran: it may have happened, and it is not run again",
    STOPPED: "stopped before it ran",
    TIMEOUT: "the tool took too long to answer",
    CALL_ID_REUSED: "the model reused another call's id, so it was not run",
    DENIED_PRIVATE_ADDRESS: "it would reach a private network address",
}


def describe(code: str | None) -> str:
    """The owner's words for an error code (a clause, no code in it). A code this table does
    not know is described by its family, so a new code never shows as a blank."""
    if code in _SENTENCES:
        return _SENTENCES[code]
    if code and code.startswith("tool.denied"):
        return "it was refused"
    return "it failed"
