"""The admin console: cancel and retry behind their permissions, a read-only
job page, the outbox's redeliver, and the catalog's pages."""

import hashlib
import uuid

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db.models.functions import Now

from accounts.models import ApiToken
from accounts.services import apitoken_create
from catalog.models import PriceSheet
from jobs.models import Attempt, Job, OutboxMessage, State
from jobs.services import job_admit

CHANGELIST = "/admin/jobs/job/"


def job_in(workspace, state=State.QUEUED, kind="noop", **fields):
    job, _ = job_admit(workspace_id=workspace.pk, kind=kind, payload=fields.pop("payload", {}))
    if state == State.RUNNING:
        fields = {"lease_token": uuid.uuid4(), "lease_until": Now(), "attempt": 1, **fields}
    Job.objects.filter(pk=job.pk).update(state=state, **fields)
    return Job.objects.get(pk=job.pk)


def staff_with(django_user_model, username, *codenames):
    user = django_user_model.objects.create_user(username, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def viewer(django_user_model, db):
    return staff_with(django_user_model, "vera", "view_job")


@pytest.fixture
def operator(django_user_model, db):
    return staff_with(django_user_model, "otto", "view_job", "cancel_job", "retry_job")


@pytest.fixture
def superuser(django_user_model, db):
    return django_user_model.objects.create_superuser("root")


def run_action(client, action, jobs, confirm=True):
    data = {"action": action, ACTION_CHECKBOX_NAME: [str(job.pk) for job in jobs]}
    if confirm:
        data["post"] = "yes"
    return client.post(CHANGELIST, data, follow=confirm)


def states(*jobs):
    return [Job.objects.get(pk=job.pk).state for job in jobs]


def offered_actions(client) -> set[str]:
    response = client.get(CHANGELIST)
    assert response.status_code == 200
    form = response.context["action_form"]  # None when no action is allowed
    return set() if form is None else {name for name, _ in form.fields["action"].choices}


def test_staff_without_the_permissions_are_not_offered_cancel_or_retry(client, viewer, workspace):
    job_in(workspace)
    client.force_login(viewer)
    assert offered_actions(client).isdisjoint({"cancel", "retry"})


def test_staff_with_the_permissions_are_offered_cancel_and_retry(client, operator, workspace):
    job_in(workspace)
    client.force_login(operator)
    assert {"cancel", "retry"} <= offered_actions(client)


def test_bulk_delete_is_not_offered_for_jobs(client, superuser, workspace):
    job_in(workspace)
    client.force_login(superuser)
    assert "delete_selected" not in offered_actions(client)


def test_forged_cancel_without_the_permission_changes_nothing(client, viewer, workspace):
    job = job_in(workspace, State.QUEUED)
    client.force_login(viewer)

    run_action(client, "cancel", [job])

    assert states(job) == [State.QUEUED]


def test_forged_retry_without_the_permission_changes_nothing(client, viewer, workspace):
    job = job_in(workspace, State.NEEDS_ATTENTION)
    client.force_login(viewer)

    run_action(client, "retry", [job])

    assert states(job) == [State.NEEDS_ATTENTION]


def test_cancel_asks_for_confirmation_with_counts_before_changing_anything(client, operator, workspace):
    queued = job_in(workspace, State.QUEUED)
    running = job_in(workspace, State.RUNNING)
    done = job_in(workspace, State.COMPLETED)
    client.force_login(operator)

    response = run_action(client, "cancel", [queued, running, done], confirm=False)

    assert response.status_code == 200
    assert response.context["eligible_count"] == 2
    assert response.context["skipped"] == ["1 was already completed"]
    assert "2 of the 3 selected jobs will be cancelled" in response.content.decode()
    assert states(queued, running, done) == [State.QUEUED, State.RUNNING, State.COMPLETED]


def test_cancel_changes_exactly_the_eligible_jobs_and_says_why_not_the_rest(client, operator, workspace):
    queued = job_in(workspace, State.QUEUED)
    running = job_in(workspace, State.RUNNING)
    review = job_in(workspace, State.AWAITING_REVIEW)
    done = [job_in(workspace, State.COMPLETED) for _ in range(3)]
    cancelled = job_in(workspace, State.CANCELLED)
    client.force_login(operator)

    response = run_action(client, "cancel", [queued, running, review, *done, cancelled])

    assert states(queued, running, review) == [State.CANCELLED] * 3
    assert states(*done) == [State.COMPLETED] * 3
    assert Job.objects.get(pk=running.pk).lease_token is None
    assert Job.objects.get(pk=queued.pk).reason == "cancelled by otto (admin)"
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == (
        "Cancelled 3 of 7 selected jobs. 4 did not change: 3 were already completed, 1 was already cancelled."
    )


def test_retry_changes_exactly_the_eligible_jobs(client, operator, workspace):
    failed = job_in(workspace, State.NEEDS_ATTENTION, finished_at=Now())
    cancelled = job_in(workspace, State.CANCELLED, finished_at=Now())
    running = job_in(workspace, State.RUNNING)
    done = job_in(workspace, State.COMPLETED, finished_at=Now())
    client.force_login(operator)

    response = run_action(client, "retry", [failed, cancelled, running, done])

    assert states(failed, cancelled, running, done) == [
        State.QUEUED,
        State.QUEUED,
        State.RUNNING,
        State.COMPLETED,
    ]
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == ("Retried 2 of 4 selected jobs. 2 did not change: 1 was completed, 1 was running.")


def test_action_with_no_eligible_job_explains_and_skips_confirmation(client, operator, workspace):
    done = job_in(workspace, State.COMPLETED)
    client.force_login(operator)

    response = run_action(client, "cancel", [done], confirm=False)

    assert response.status_code == 302
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == "None of the 1 selected jobs can be cancelled: 1 was already completed."


def test_job_that_moved_after_confirmation_is_counted_as_unchanged(client, operator, workspace):
    job = job_in(workspace, State.QUEUED)
    client.force_login(operator)
    run_action(client, "cancel", [job], confirm=False)
    Job.objects.filter(pk=job.pk).update(state=State.COMPLETED, finished_at=Now())

    response = run_action(client, "cancel", [job])

    assert states(job) == [State.COMPLETED]
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert "1 was already completed" in message


def test_change_form_post_cannot_alter_state_or_token(client, superuser, workspace):
    job = job_in(workspace, State.RUNNING)
    client.force_login(superuser)
    url = f"/admin/jobs/job/{job.pk}/change/"

    response = client.post(
        url,
        {
            "state": State.COMPLETED,
            "lease_token": "",
            "lease_until": "",
            "attempt": 9,
            "output": '{"forged": true}',
            "_save": "Save",
        },
    )

    assert response.status_code == 403
    after = Job.objects.get(pk=job.pk)
    assert (after.state, after.lease_token, after.attempt, after.output) == (
        State.RUNNING,
        job.lease_token,
        1,
        None,
    )


def test_change_form_shows_no_editable_job_field(client, superuser, workspace):
    job = job_in(workspace, State.RUNNING)
    client.force_login(superuser)

    response = client.get(f"/admin/jobs/job/{job.pk}/change/")

    assert response.status_code == 200
    assert list(response.context["adminform"].form.fields) == []
    assert 'name="_save"' not in response.content.decode()


def test_jobs_cannot_be_added_in_admin(client, superuser, db):
    client.force_login(superuser)
    assert client.get("/admin/jobs/job/add/").status_code == 403


def test_unfinished_job_cannot_be_deleted_but_a_finished_one_can(client, superuser, workspace):
    running = job_in(workspace, State.RUNNING)
    cancelled = job_in(workspace, State.CANCELLED, finished_at=Now())
    client.force_login(superuser)

    assert client.post(f"/admin/jobs/job/{running.pk}/delete/", {"post": "yes"}).status_code == 403
    client.post(f"/admin/jobs/job/{cancelled.pk}/delete/", {"post": "yes"})

    assert Job.objects.filter(pk=running.pk).exists()
    assert not Job.objects.filter(pk=cancelled.pk).exists()


def test_job_page_shows_attempts_with_stale_diagnostic_and_flagged_output(client, superuser, workspace):
    output = {
        "items": [
            {
                "sku": "A-1",
                "description": "Bolt",
                "unit": "pc",
                "pack_size": None,
                "unit_price": "1.50",
                "currency": None,
                "source": {"sheet": "Sheet1", "row": 4},
                "flags": [{"code": "missing_currency", "field": "currency", "message": "no currency found"}],
            }
        ],
        "notes": ["header row 3"],
    }
    # The items table is what the sheet kind registers for its output.
    job = job_in(workspace, State.AWAITING_REVIEW, kind="parse_sheet", output=output)
    Attempt.objects.create(
        job=job,
        number=1,
        lease_token=uuid.uuid4(),
        worker_id="host:7",
        outcome=Attempt.Outcome.STALE,
        diagnostic={"rejected": "accept"},
        provider_request_ids=["req_123"],
        token_usage={"total_tokens": 42},
    )
    client.force_login(superuser)

    page = client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()

    assert "host:7" in page and "stale" in page
    assert "rejected" in page and "req_123" in page and "total_tokens: 42" in page
    assert "missing_currency: no currency found" in page
    assert "1 item(s), 1 flagged" in page


def test_staff_who_may_view_jobs_see_their_attempts(client, viewer, workspace):
    job = job_in(workspace, State.RUNNING)
    Attempt.objects.create(job=job, number=1, lease_token=uuid.uuid4(), worker_id="host:8")
    client.force_login(viewer)

    assert "host:8" in client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()


def test_jobs_are_found_by_id_prefix_idempotency_key_and_file_name(client, superuser, workspace):
    sheet = PriceSheet.objects.create(
        workspace=workspace,
        sha256="a" * 64,
        size=10,
        original_name="Grossist Prisliste 2026.xlsx",
        storage_path="sheets/aa",
    )
    by_file = job_in(workspace, payload={"sheet_id": str(sheet.pk)})
    by_key, _ = job_admit(workspace_id=workspace.pk, kind="noop", payload={}, idempotency_key="upload-7781")
    other = job_in(workspace)
    client.force_login(superuser)

    def found(term):
        response = client.get(CHANGELIST, {"q": term})
        return {job.pk for job in response.context["cl"].result_list}

    assert found("prisliste") == {by_file.pk}
    assert found(str(sheet.pk)) == {by_file.pk}
    assert found("upload-77") == {by_key.pk}
    assert found(str(other.pk)) == {other.pk}
    assert other.pk in found(str(other.pk)[:8])


def test_job_list_filters_by_state(client, superuser, workspace):
    queued = job_in(workspace, State.QUEUED)
    job_in(workspace, State.COMPLETED)
    client.force_login(superuser)

    response = client.get(CHANGELIST, {"state__exact": "queued"})

    assert [job.pk for job in response.context["cl"].result_list] == [queued.pk]


# --- outbox and endpoints -------------------------------------------------------------


def outbox_message(workspace, **fields):
    message = OutboxMessage.objects.create(workspace=workspace, topic="job.completed", payload={})
    OutboxMessage.objects.filter(pk=message.pk).update(**fields)
    return message


def test_redeliver_sends_failed_messages_back_and_leaves_the_rest(client, superuser, workspace):
    failed = outbox_message(workspace, failed_at=Now(), attempts=8, last_error="HTTP 500")
    delivered = outbox_message(workspace, delivered_at=Now())
    client.force_login(superuser)

    response = client.post(
        "/admin/jobs/outboxmessage/",
        {
            "action": "redeliver",
            ACTION_CHECKBOX_NAME: [str(failed.pk), str(delivered.pk)],
        },
        follow=True,
    )

    row = OutboxMessage.objects.get(pk=failed.pk)
    assert (row.failed_at, row.attempts) == (None, 0)
    assert OutboxMessage.objects.get(pk=delivered.pk).delivered_at is not None
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == [
        "1 failed message(s) will be delivered again.",
        "1 were not failed and were left alone: 1 was already delivered.",
    ]


def test_outbox_list_filters_failed_messages(client, superuser, workspace):
    failed = outbox_message(workspace, failed_at=Now())
    outbox_message(workspace)
    client.force_login(superuser)

    response = client.get("/admin/jobs/outboxmessage/", {"status": "failed"})

    assert [m.pk for m in response.context["cl"].result_list] == [failed.pk]


def test_redeliver_is_not_offered_without_change_permission(client, django_user_model, workspace):
    failed = outbox_message(workspace, failed_at=Now())
    client.force_login(staff_with(django_user_model, "ivy", "view_outboxmessage"))

    client.post("/admin/jobs/outboxmessage/", {"action": "redeliver", ACTION_CHECKBOX_NAME: [str(failed.pk)]})

    assert OutboxMessage.objects.get(pk=failed.pk).failed_at is not None


# --- catalog --------------------------------------------------------------------------------


def test_revoke_action_revokes_api_tokens(client, superuser, member):
    token, _ = apitoken_create(user=member, name="ci")
    client.force_login(superuser)

    client.post("/admin/accounts/apitoken/", {"action": "revoke", ACTION_CHECKBOX_NAME: [str(token.pk)]})

    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None


def test_admin_creates_a_read_token_and_shows_it_once(client, superuser, member):
    client.force_login(superuser)
    response = client.post(
        "/admin/accounts/apitoken/add/", {"user": member.pk, "name": "erp", "scope": "read"}, follow=True
    )
    row = ApiToken.objects.get(user=member)
    shown = [str(m) for m in get_messages(response.wsgi_request)] or [
        m.message for m in response.context["messages"]
    ]
    token = next(word for m in shown for word in m.split() if word.startswith("psk_"))
    assert (row.name, row.scope) == ("erp", ApiToken.Scope.READ)
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in client.get(f"/admin/accounts/apitoken/{row.pk}/change/").content.decode()


def test_api_tokens_cannot_be_added_without_the_permission(client, django_user_model, db):
    client.force_login(staff_with(django_user_model, "vic", "view_apitoken"))
    assert client.get("/admin/accounts/apitoken/add/").status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        "/admin/accounts/workspace/",
        "/admin/catalog/supplier/",
        "/admin/catalog/pricesheet/",
        "/admin/catalog/catalogrevision/",
        "/admin/accounts/apitoken/",
        "/admin/jobs/job/",
        "/admin/jobs/outboxmessage/",
        "/admin/jobs/webhookendpoint/",
    ],
)
def test_admin_lists_render(client, superuser, path):
    client.force_login(superuser)
    assert client.get(path).status_code == 200


def test_workspace_page_lists_its_members(client, superuser, workspace, member):
    client.force_login(superuser)
    page = client.get(f"/admin/accounts/workspace/{workspace.pk}/change/").content.decode()
    assert "mia" in page
