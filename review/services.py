"""The review app's writes, in one place: the reviewer's decisions
(review.decisions) and the grid's snapshots (review.snapshots). Views, the
API and signal receivers call these; the edit logic they apply is pure and
lives in review.edits."""

from review.decisions import review_approve, review_preview, review_reject, review_save_edits
from review.snapshots import review_snapshot_current, review_snapshot_on_staged, review_snapshot_store

__all__ = [
    "review_approve",
    "review_preview",
    "review_reject",
    "review_save_edits",
    "review_snapshot_current",
    "review_snapshot_on_staged",
    "review_snapshot_store",
]
