"""The operator commands of the contract."""

import hashlib
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiToken, Membership, Workspace
from accounts.services import apitoken_authenticate
from jobs.models import Job, State


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_createworkspace_creates_once(db):
    run("createworkspace", "acme", "--name", "Acme Supplies")
    run("createworkspace", "acme")
    assert list(Workspace.objects.values_list("slug", "name")) == [("acme", "Acme Supplies")]


def test_addmember_creates_user_with_role_and_password(workspace):
    run("addmember", "acme", "zoe", "--role", "reviewer", "--password", "zoe-pass-123")
    user = get_user_model().objects.get(username="zoe")
    assert user.check_password("zoe-pass-123")
    assert Membership.objects.get(user=user, workspace=workspace).role == "reviewer"


@pytest.mark.parametrize(
    "username, password, why",
    [
        ("zoe", "short-1", "too short"),
        ("zoe", "password123", "too common"),
        ("zoe", "4815162342", "entirely numeric"),
        ("zoe.brandt", "zoebrandt1", "too similar to the username"),
    ],
)
def test_addmember_refuses_a_weak_password(workspace, username, password, why):
    with pytest.raises(CommandError, match=why):
        call_command("addmember", "acme", username, "--role", "reviewer", "--password", password)
    assert not get_user_model().objects.filter(username=username).exists()


def test_addmember_rejects_unknown_role(workspace):
    with pytest.raises(CommandError):
        call_command("addmember", "acme", "zoe", "--role", "owner", "--password", "x")


def test_createapitoken_prints_token_once_and_stores_only_its_hash(member):
    token = run("createapitoken", member.username).strip()
    row = ApiToken.objects.get(user=member)
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in (row.token_hash, row.prefix)
    assert apitoken_authenticate(token=token).user == member


def test_enqueue_admits_count_jobs(workspace):
    out = run("enqueue", "noop", "--workspace", "acme", "--count", "12")
    assert "12 noop job(s) queued in acme" in out
    assert Job.objects.filter(kind="noop", state=State.QUEUED).count() == 12


def test_enqueue_refuses_unknown_kind(workspace):
    with pytest.raises(CommandError, match="unknown job kind"):
        call_command("enqueue", "nope", "--workspace", "acme")


def test_recoverjobs_reports_what_it_moved(workspace):
    from datetime import timedelta

    from django.db.models.functions import Now

    from jobs.services import job_claim_next

    run("enqueue", "noop", "--workspace", "acme")
    claim = job_claim_next(worker_id="w")
    Job.objects.filter(pk=claim.job_id).update(lease_until=Now() - timedelta(seconds=1))
    out = run("recoverjobs")
    assert f"{claim.job_id} -> retrying" in out
    assert "1 job(s) recovered" in out
