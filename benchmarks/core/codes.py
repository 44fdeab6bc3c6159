"""The words every seam shares: send outcomes, message statuses, the final read's group.

The ledger writes them, the checker and the Spark jobs read them, the report prints them;
each is spelled here once.
"""

from __future__ import annotations

# What the producer was told of a message: acknowledged, refused, or unknown (timed out, no
# delivery report) — an indeterminate message may be in the log and is never counted as acked.
OUTCOMES = ("acked", "failed", "indeterminate")

# What became of a message, once the log has been read back to its end after healing:
# - delivered: in the log;
# - lost: acknowledged, not in the log, and the log holds a later offset of its partition;
# - unseen: acknowledged, not in the log, and nothing after its offset was read (the log was
#   truncated below it and nothing followed): gone too, only not provably overwritten;
# - failed, indeterminate: not acknowledged and not in the log; -delivered: in the log anyway;
# - unledgered: in the log, absent from the produce ledger (a producer that crashed).
STATUSES = ("delivered", "lost", "unseen", "failed", "failed-delivered", "indeterminate", "indeterminate-delivered",
            "unledgered")

# The prefixes of every name the harness gives the cluster: its topics (workload.topic unless a
# scenario names its own), and its consumer groups and transactional.ids. A secured cluster's ACLs
# grant the harness's user these by prefix (inventories/local-secure), and nothing else.
TOPIC_PREFIX = "kb-"
CLIENT_NAME_PREFIX = "kafka-bench-"

# The consume ledger's group for the final read of the whole topic (consumer groups have
# their own names; this one is never a real group's).
FINAL_READ = "final-read"
# A transactional run's second final read, isolation.level=read_committed: what a read_committed
# consumer gets of the log (the first one reads uncommitted: every acknowledged write, aborted or not).
FINAL_READ_COMMITTED = "final-read-committed"
FINAL_READS = (FINAL_READ, FINAL_READ_COMMITTED)

# What became of a transaction, as its producer was told: commit_transaction() returned,
# abort_transaction() returned, or neither could be confirmed (a commit that timed out, a fatal error).
TXN_FATES = ("committed", "aborted", "unknown")

# A negative control (a scenario built to lose acknowledged writes) must lose in at least this
# share of its valid trials, or the harness is flagged blind.
BLIND_SHARE = 0.9
