"""Template helpers for the review links other pages show: only to members
with the reviewer role, and the flag counts of a job awaiting review."""

from django import template

from accounts.models import Membership
from review.selectors import review_flag_summary, user_is_reviewer_anywhere
from review.services import review_snapshot_current

register = template.Library()


@register.filter
def can_review(user) -> bool:
    """True for a member with the reviewer (or admin) role in some workspace."""
    return bool(user) and user_is_reviewer_anywhere(user=user)


@register.filter
def can_review_job(user, job) -> bool:
    return (
        bool(user)
        and user.is_authenticated
        and Membership.objects.reviewers().filter(user=user, workspace_id=job.workspace_id).exists()
    )


@register.simple_tag
def flag_reasons(job):
    """Flag counts per reason, each with the first item that has it."""
    return review_flag_summary(snapshot=review_snapshot_current(job=job))["reasons"]
