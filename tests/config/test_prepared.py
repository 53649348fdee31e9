"""Querysets compiled once into prepared statements (config.prepared.PreparedQuery)."""

import uuid

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from catalog.selectors import member_job_with_report, with_reading_report
from config.prepared import PreparedQuery
from jobs.models import Job, State
from jobs.selectors import jobs_with_live_phase
from jobs.services import job_admit

OUTPUT = {
    "items": [{"sku": "A-1"}],
    "columns": [{"sheet": "Sheet1", "header_row": 1, "columns": []}],
    "layout": {"source": "inferred"},
}


def _job(workspace, **changes) -> Job:
    job, _ = job_admit(workspace_id=workspace.pk, kind="parse_sheet", payload={"sheet_id": None})
    Job.objects.filter(pk=job.pk).update(**changes)
    return job


def test_member_job_is_the_instance_the_queryset_makes(member, workspace):
    job = _job(workspace, state=State.AWAITING_REVIEW, output=OUTPUT, result={"item_count": 1})
    expected = (
        with_reading_report(jobs_with_live_phase(Job.objects.for_member(member))).filter(pk=job.pk).first()
    )
    found = member_job_with_report(user=member, job_id=job.pk)
    fields = [field.attname for field in Job._meta.concrete_fields if field.attname != "output"]
    assert {name: getattr(found, name) for name in fields} == {
        name: getattr(expected, name) for name in fields
    }
    assert found.get_deferred_fields() == expected.get_deferred_fields() == {"output"}
    assert (found.output_columns, found.output_layout) == (OUTPUT["columns"], OUTPUT["layout"])
    assert found.phase_seconds == pytest.approx(expected.phase_seconds, abs=5)
    assert found.payload == {"sheet_id": None}  # JSON columns as the ORM converts them


def test_member_job_of_another_workspace_is_none(outsider, workspace):
    job = _job(workspace)
    assert member_job_with_report(user=outsider, job_id=job.pk) is None
    assert member_job_with_report(user=outsider, job_id=uuid.uuid4()) is None


def test_member_job_statement_is_prepared_on_the_connection(member, workspace):
    job = _job(workspace)
    member_job_with_report(user=member, job_id=job.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any('FROM "jobs_job"' in text and "clock_timestamp()" in text for text in prepared)


def test_member_job_is_read_unprepared_behind_a_transaction_pooler(member, workspace, settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    job = _job(workspace, output=OUTPUT)
    found = member_job_with_report(user=member, job_id=job.pk)
    assert (found.pk, found.output_columns) == (job.pk, OUTPUT["columns"])


def test_a_probe_the_query_does_not_use_is_refused(db):
    query = PreparedQuery(lambda job_id: Job.objects.filter(kind="parse_sheet"), job_id=uuid.uuid4())
    with pytest.raises(ImproperlyConfigured, match="job_id"):
        query.first(job_id=uuid.uuid4())


def test_a_query_of_related_instances_is_refused(db):
    query = PreparedQuery(
        lambda job_id: Job.objects.select_related("workspace").filter(pk=job_id), job_id=uuid.uuid4()
    )
    with pytest.raises(ImproperlyConfigured, match="one model"):
        query.first(job_id=uuid.uuid4())
