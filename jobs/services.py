"""The job state machine: every transition of DESIGN.md is one function here.

Each is a single conditional UPDATE whose row count is checked, or one short
transaction around such an UPDATE and the writes that must share it. Zero rows
raises a named exception that callers handle on purpose.

The fence is the pair (attempt, lease_token). Every transition away from
`running` clears the token, so a worker that lost its claim can never write
again. Lease times are database time (`clock_timestamp()`), never a worker's
clock.
"""

import functools
import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models.functions import Coalesce, Greatest, Least
from django.db.models import (
    Case,
    JSONField,
    DateTimeField,
    DurationField,
    F,
    FloatField,
    Func,
    Q,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.utils import timezone
from psycopg.types.json import Jsonb

from config.prepared import prepared_cursor
from jobs.backoff import backoff_seconds
from jobs.models import (
    CANCELLABLE_STATES,
    CLAIMABLE_STATES,
    REQUEUEABLE_STATES,
    RETRYABLE_STATES,
    Attempt,
    Job,
    JobCheckpoint,
    OutboxMessage,
    State,
)
from jobs.signals import job_staged_for_review

log = logging.getLogger(__name__)


class LeaseLost(Exception):
    """The guarded UPDATE affected zero rows: this claim no longer owns the
    job (its lease expired, it was cancelled, or another attempt took over)."""


class InvalidTransition(Exception):
    """The job is not in a state this transition starts from."""

    def __init__(self, job_id: uuid.UUID, state: str, transition: str):
        super().__init__(f"cannot {transition} job {job_id}: it is {state}")
        self.job_id = job_id
        self.state = state
        self.transition = transition


class VersionConflict(Exception):
    """The job changed since the caller read it (another reviewer, a cancel,
    a retry); the caller's decision was made on stale information."""

    def __init__(self, job_id: uuid.UUID, expected: int, actual: int, state: str):
        super().__init__(
            f"job {job_id} changed since version {expected}: it is now version {actual}, {state}"
        )
        self.job_id = job_id
        self.expected = expected
        self.actual = actual
        self.state = state


class IdempotencyConflict(Exception):
    """The idempotency key was already used for a different request."""

    def __init__(self, job: Job):
        super().__init__(f"idempotency key {job.idempotency_key!r} was used for another request")
        self.job = job


NOTIFY_CHANNEL = f"{settings.JOBS_PRODUCT}_jobs"

Publish = Callable[[Job], dict | None]


@dataclass(frozen=True)
class Claim:
    """What a worker holds while it runs a job: the fence and the input."""

    job_id: uuid.UUID
    kind: str
    attempt: int
    token: uuid.UUID
    worker_id: str
    workspace_id: int
    payload: dict


class ClockTimestamp(Func):
    """Database wall-clock time, which moves within a transaction (`now()`
    does not): leases are measured against it."""

    template = "clock_timestamp()"
    output_field = Job._meta.get_field("lease_until")

    def __init__(self) -> None:
        super().__init__()


class SecondsSince(Func):
    template = "EXTRACT(EPOCH FROM (clock_timestamp() - %(expressions)s))::double precision"
    output_field = FloatField()


def _choose(condition: Q | bool, then: Any, default: Any, output_field=None) -> Any:
    """`CASE WHEN condition` over the old row; a plain bool needs no CASE."""
    if condition is True:
        return then
    if condition is False:
        return default
    return Case(When(condition, then=then), default=default, output_field=output_field)


def _interval(seconds: float) -> Value:
    return Value(timedelta(seconds=seconds), output_field=DurationField())


# The time a job spends per phase: the column that accumulates it, and the
# states that count as that phase.
PHASES = {
    "waiting_seconds": CLAIMABLE_STATES,
    "running_seconds": [State.RUNNING],
    "review_seconds": [State.AWAITING_REVIEW],
}


def _leave_state_sql(row: str = "") -> dict[str, str]:
    """The assignments every transition makes, as SQL over the old row (SET
    expressions see it): the time spent in the state being left is added to
    its phase's total, the new state's clock starts, the version is bumped.
    `row` qualifies the job's columns ("j." in a statement that names the
    job table j). The ORM transitions and the single-statement claim and
    accept are written from this one definition."""
    elapsed = f"EXTRACT(EPOCH FROM (clock_timestamp() - {row}state_changed_at))::double precision"
    sets = {}
    for column, states in PHASES.items():
        listed = ", ".join(f"'{state}'" for state in states)
        sets[column] = f"{row}{column} + CASE WHEN {row}state IN ({listed}) THEN {elapsed} ELSE 0 END"
    sets.update(
        state_changed_at="clock_timestamp()", updated_at="clock_timestamp()", version=f"{row}version + 1"
    )
    return sets


def _leave_state_clause(row: str) -> str:
    return ", ".join(f"{column} = {sql}" for column, sql in _leave_state_sql(row).items())


def _leave_state(**changes: Any) -> dict[str, Any]:
    """UPDATE assignments for a transition made with the ORM: those of
    `_leave_state_sql`, then the transition's own."""
    return {
        **{
            column: RawSQL(sql, (), output_field=Job._meta.get_field(column))
            for column, sql in _leave_state_sql().items()
        },
        **changes,
    }


def _fenced(claim: Claim):
    """The rows this claim still owns: same attempt, same token, running."""
    return Job.objects.filter(
        pk=claim.job_id, state=State.RUNNING, attempt=claim.attempt, lease_token=claim.token
    )


def _notify(kind: str) -> None:
    """Wake idle workers once the caller's transaction has committed (at
    once outside one): a rolled-back admission wakes nobody.

    The NOTIFY is sent in a transaction of its own, with synchronous_commit
    off. A transaction that notifies holds a database-wide lock from just
    before its commit until the commit is flushed, so admissions that
    notified inside their own transaction committed one at a time, one WAL
    flush each. Now their rows commit with group commit (still flushed
    before the 202), and the lock is held only for a commit that does not
    wait for the disk. A wake-up is a hint, not data: a lost one costs a
    worker one poll interval."""
    if settings.JOB_NOTIFY:
        transaction.on_commit(functools.partial(_send_notify, kind), robust=True)


def _send_notify(kind: str) -> None:
    # One statement, one round trip: run after the commit (autocommit), it
    # is a transaction of its own, and the setting is local to it.
    with prepared_cursor() as cursor:
        cursor.execute(
            "SELECT set_config('synchronous_commit', 'off', true), pg_notify(%s, %s)", [NOTIFY_CHANNEL, kind]
        )


def _state_of(job_id: uuid.UUID) -> str:
    return Job.objects.filter(pk=job_id).values_list("state", flat=True).get()


def _why_not(job_id: uuid.UUID, transition: str, expected_version: int | None) -> Exception:
    """Explain a zero-row versioned transition (read after the UPDATE failed)."""
    row = Job.objects.filter(pk=job_id).values("state", "version").first()
    if row is None:
        return Job.DoesNotExist(f"job {job_id} does not exist")
    if expected_version is not None and row["version"] != expected_version:
        return VersionConflict(job_id, expected_version, row["version"], row["state"])
    return InvalidTransition(job_id, row["state"], transition)


def outbox_write(*, workspace_id: int, topic: str, payload: dict) -> OutboxMessage:
    """Record an event in the caller's transaction; the relay delivers it."""
    return OutboxMessage.objects.create(workspace_id=workspace_id, topic=topic, payload=payload)


# What every job event says of its job: payload member -> job column.
_EVENT_MEMBERS = {"job_id": "id", "kind": "kind", "state": "state", "attempt": "attempt"}


def job_event_payload(job: dict[str, Any], **extra: Any) -> dict:
    """A job event's payload from the job's columns (`_EVENT_MEMBERS`), plus `extra`."""
    payload = {member: job[column] for member, column in _EVENT_MEMBERS.items()}
    return {**payload, "job_id": str(payload["job_id"]), **extra}


def _event_payload_sql(row: str, **extra: str) -> str:
    """The same payload built in SQL from a row with the job's columns;
    `extra` maps more members to SQL expressions."""
    members = {**{m: f"{row}{c}" for m, c in _EVENT_MEMBERS.items()}, **extra}
    members["job_id"] += "::text"
    return "jsonb_build_object(" + ", ".join(f"'{m}', {sql}" for m, sql in members.items()) + ")"


def _job_event(job_id: uuid.UUID, topic: str, **extra: Any) -> None:
    row = Job.objects.filter(pk=job_id).values("workspace_id", *_EVENT_MEMBERS.values()).get()
    outbox_write(workspace_id=row["workspace_id"], topic=topic, payload=job_event_payload(row, **extra))


def _job_backoff(attempt: int) -> float:
    return backoff_seconds(
        attempt, base=settings.JOB_BACKOFF_BASE_SECONDS, cap=settings.JOB_BACKOFF_MAX_SECONDS
    )


# --- admit ----------------------------------------------------------------


@functools.cache
def _insert_fields(model: type) -> tuple[list, str]:
    """The fields of `model` that Django writes on insert (those without a
    database default) and their quoted columns."""
    fields = [f for f in model._meta.concrete_fields if not f.has_db_default()]
    return fields, ", ".join(connection.ops.quote_name(f.column) for f in fields)


# A default made anew for each row (a callable, or the time of the insert).
_PER_ROW = object()


@functools.cache
def _insert_defaults(model: type) -> list[tuple[Any, Any, Any]]:
    """Per field of `_insert_fields(model)`: the field, its default, and
    that default prepared for the database, or _PER_ROW twice when each row
    makes its own (a callable default, `auto_now`). Prepared once: admission
    inserts three new rows on every upload, and building model instances to
    prepare their forty fields cost half of its statement's time."""
    fields, _ = _insert_fields(model)
    wrapper = connections[DEFAULT_DB_ALIAS]
    plan = []
    for field in fields:
        if (
            callable(field.default)
            or getattr(field, "auto_now", False)
            or getattr(field, "auto_now_add", False)
        ):
            plan.append((field, _PER_ROW, _PER_ROW))
        else:
            default = field.get_default()
            plan.append((field, default, field.get_db_prep_save(default, wrapper)))
    return plan


def _new_row(model: type, values: dict[str, Any]) -> tuple[dict[str, Any], list]:
    """A new row of `model` from `values` (by attname), the rest defaults, as
    `Model(**values)` and its insert would make it: (every inserted field's
    value by attname, the prepared values in `_insert_fields` order)."""
    wrapper = connections[DEFAULT_DB_ALIAS]  # not the proxy: once per field adds up
    row, prepared = {}, []
    for field, default, ready in _insert_defaults(model):
        if field.attname in values:
            value = values[field.attname]
        elif default is _PER_ROW:
            auto = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
            value = timezone.now() if auto else field.get_default()
        else:
            row[field.attname] = default
            prepared.append(ready)
            continue
        row[field.attname] = value
        prepared.append(field.get_db_prep_save(value, wrapper))
    return row, prepared


@functools.cache
def _admit_sql(with_job: tuple[type, ...]) -> tuple[str, list[str]]:
    """One statement: insert the job unless its key is taken (the unique
    constraint decides, waiting for a concurrent holder of the key to commit
    or roll back), and rows of the models `with_job` (its `job.accepted`
    message, the caller's rows) only if it was inserted. Returns the job's
    database defaults. Written once per shape: admission runs it on every
    upload."""
    job_fields, job_columns = _insert_fields(Job)
    returned = [f for f in Job._meta.concrete_fields if f.has_db_default()]
    quote = connection.ops.quote_name
    sql = (
        f"WITH job AS (INSERT INTO {quote(Job._meta.db_table)} ({job_columns}) "
        f"VALUES ({', '.join(['%s'] * len(job_fields))}) "
        "ON CONFLICT (workspace_id, idempotency_key) DO NOTHING "
        f"RETURNING {', '.join(quote(f.column) for f in returned)})"
    )
    for number, model in enumerate(with_job):
        fields, columns = _insert_fields(model)
        sql += (
            f", row{number} AS (INSERT INTO {quote(model._meta.db_table)} ({columns}) "
            f"SELECT {', '.join(['%s'] * len(fields))} FROM job)"
        )
    return sql + " SELECT * FROM job", [f.attname for f in returned]


def job_admit(
    *,
    workspace_id: int,
    kind: str,
    payload: dict,
    idempotency_key: str | None = None,
    fingerprint: str = "",
    created_by_id: int | None = None,
    rows: Iterable[tuple[type, dict[str, Any]]] = (),
) -> tuple[Job, bool]:
    """Create a queued job and its outbox message in one transaction, with
    `rows` (new rows as (model, values by attname), e.g. the upload the job
    reads) inserted in the same statement only if the job is: a replay
    inserts none of them.

    Returns (job, created). The same key with the same fingerprint returns
    the existing job; with another fingerprint raises IdempotencyConflict.
    The unique constraint on (workspace, idempotency_key) decides between
    concurrent duplicates: the loser's INSERT waits for the winner's commit,
    inserts nothing, and the loser reads the winner's row.

    The job and its message are one statement (one round trip, no
    savepoint): admission runs on every upload, and its statements, not
    its work, were most of its time (bench/admission_latency.py).
    """
    job, job_values = _new_row(
        Job,
        {
            "id": uuid.uuid4(),
            "workspace_id": workspace_id,
            "kind": kind,
            "payload": payload,
            "idempotency_key": idempotency_key,
            "request_fingerprint": fingerprint,
            "created_by_id": created_by_id,
            "max_attempts": settings.JOB_MAX_ATTEMPTS,
        },
    )
    event = (
        OutboxMessage,
        {"workspace_id": workspace_id, "topic": "job.accepted", "payload": job_event_payload(job)},
    )
    rows = [event, *rows]
    sql, returned = _admit_sql(tuple(model for model, _ in rows))
    params = job_values + [value for model, values in rows for value in _new_row(model, values)[1]]
    # One statement is one transaction of its own (or joins the caller's).
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        if idempotency_key is None:
            raise IntegrityError("the job was not inserted")
        existing = Job.objects.get(workspace_id=workspace_id, idempotency_key=idempotency_key)
        if existing.request_fingerprint != fingerprint or existing.kind != kind:
            raise IdempotencyConflict(existing)
        return existing, False
    job.update(zip(returned, row, strict=True))
    _notify(kind)
    # As loaded from the database: every field is known.
    return Job.from_db(connection.alias, None, [job[f.attname] for f in Job._meta.concrete_fields]), True


def jobs_admit_many(*, workspace_id: int, kind: str, count: int, payload: dict | None = None) -> int:
    """Admit `count` jobs without idempotency keys (operators, benchmarks)."""
    with transaction.atomic():
        jobs = Job.objects.bulk_create(
            Job(
                workspace_id=workspace_id,
                kind=kind,
                payload=payload or {},
                max_attempts=settings.JOB_MAX_ATTEMPTS,
            )
            for _ in range(count)
        )
        OutboxMessage.objects.bulk_create(
            OutboxMessage(
                workspace_id=workspace_id, topic="job.accepted", payload=job_event_payload(vars(job))
            )
            for job in jobs
        )
        _notify(kind)
    return len(jobs)


# --- claim ----------------------------------------------------------------


# The claim and the accept run once per job on every worker, so they are
# written as single statements: building Django expressions for them cost
# two thirds of each job's time (bench/queue_throughput.py --profile). Their
# assignments and events are written from the same definitions as the ORM
# transitions' (_leave_state_sql, _event_payload_sql); their guards are
# those of _fenced(), and which rows are claimable is JobQuerySet.claimable().
#
# Fair between workspaces: one workspace's backlog does not hold up another
# workspace's job. Each workspace's next jobs take turns: a workspace's k-th
# next job has turn (its jobs running now) + k, and lower turns go first;
# between equal turns, the workspace served least recently (the later of
# its oldest due job and its last claim) goes first, then the older job.
# With one workspace this is oldest first.
_CLAIM_SQL = """
WITH RECURSIVE busy AS (
    -- The workspaces with a due job: one probe of job_claimable_workspace each.
    (SELECT workspace_id FROM jobs_job WHERE {due} ORDER BY workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT workspace_id FROM jobs_job WHERE {due} AND workspace_id > busy.workspace_id
            ORDER BY workspace_id LIMIT 1)
    FROM busy WHERE busy.workspace_id IS NOT NULL
),
workspaces AS MATERIALIZED (
    SELECT busy.workspace_id,
           (SELECT count(*) FROM jobs_job AS r
            WHERE r.workspace_id = busy.workspace_id AND r.state = 'running') AS running,
           (SELECT max(s.claimed_at) FROM jobs_job AS s
            WHERE s.workspace_id = busy.workspace_id AND s.claimed_at IS NOT NULL) AS served
    FROM busy WHERE busy.workspace_id IS NOT NULL
),
turns AS MATERIALIZED (
    SELECT c.id, w.running + c.position AS turn, greatest(c.oldest, w.served) AS since, c.run_after
    FROM workspaces AS w CROSS JOIN LATERAL (
        SELECT d.id, d.run_after, row_number() OVER (ORDER BY d.run_after) AS position,
               min(d.run_after) OVER () AS oldest
        FROM (SELECT id, run_after FROM jobs_job
              WHERE jobs_job.workspace_id = w.workspace_id AND {due_kinds}
              ORDER BY run_after LIMIT {window}) AS d
    ) AS c
),
next AS (
    -- In turn order, each row locked as it is reached: SKIP LOCKED passes
    -- over a row another claimer holds, and a row claimed since this
    -- statement's snapshot fails the recheck.
    SELECT j.id, t.turn, t.since, t.run_after
    FROM (SELECT * FROM turns ORDER BY turn, since, run_after) AS t
    CROSS JOIN LATERAL (SELECT jobs_job.id FROM jobs_job WHERE jobs_job.id = t.id AND {due_kinds}
                        FOR UPDATE SKIP LOCKED) AS j
    LIMIT {limit}
),{claim}
SELECT c.id, c.kind, c.attempt, c.workspace_id, c.payload, c.lease_token
FROM claimed AS c JOIN next AS n ON n.id = c.id ORDER BY n.turn, n.since, n.run_after
"""

# The oldest claimable jobs, whatever their workspace: asked only when the
# fair statement claimed nothing, which it does when every job in its
# look-ahead was held by other claimers (or when nothing is claimable).
_CLAIM_OLDEST_SQL = """
WITH next AS ({candidate}),{claim}
SELECT id, kind, attempt, workspace_id, payload, lease_token FROM claimed ORDER BY run_after
"""

# What both claim statements do with the rows `next` locked.
_CLAIM_UPDATE_SQL = """
claimed AS (
    UPDATE jobs_job AS j
    SET state = 'running', attempt = j.attempt + 1, lease_token = gen_random_uuid(),
        lease_until = clock_timestamp() + make_interval(secs => %s), worker_id = %s,
        claimed_at = clock_timestamp(), {leave_state}
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.kind, j.attempt, j.workspace_id, j.payload, j.lease_token, j.run_after
),
opened AS (
    INSERT INTO jobs_attempt (job_id, number, lease_token, worker_id, started_at, outcome, error,
                              provider_request_ids)
    SELECT id, attempt, lease_token, %s, clock_timestamp(), 'running', '', '[]'::jsonb FROM claimed
)"""

# How many of each workspace's next jobs the fair claim looks at beyond the
# ones it claims: rows other claimers hold at the same moment are skipped.
CLAIM_LOOKAHEAD = 16


def _where(queryset) -> tuple[str, list]:
    """The WHERE clause of `queryset` (over the unaliased jobs_job) and its params."""
    query = queryset.query
    return query.where.as_sql(query.get_compiler(connection=connection), connection)


@functools.cache
def _claim_sql(kinds: tuple[str, ...] | None, limit: int, fair: bool = True) -> tuple[str, tuple]:
    """A claim statement and its leading params, compiled once per set of
    kinds and batch size: the fair one, or (fair=False) oldest first.

    Its `next` part is the claimable rows to take, locked: SKIP LOCKED lets
    concurrent claimers pass over a row another claimer holds instead of
    queueing behind it. The statement itself runs as its own transaction."""
    claim = _CLAIM_UPDATE_SQL.format(leave_state=_leave_state_clause("j."))
    candidates = Job.objects.claimable()
    if kinds is not None:
        candidates = candidates.filter(kind__in=kinds)
    if not fair:
        query = (
            candidates.select_for_update(skip_locked=True)
            .order_by("run_after")
            .values("id", "run_after")[:limit]
        )
        # The ORM builds SELECT ... FOR UPDATE only inside a transaction.
        with transaction.atomic():
            candidate, params = query.query.sql_with_params()
        return _CLAIM_OLDEST_SQL.format(candidate=candidate, claim=claim), tuple(params)
    due, due_params = _where(Job.objects.claimable())
    due_kinds, kinds_params = _where(candidates)
    sql = _CLAIM_SQL.format(
        due=due, due_kinds=due_kinds, window=int(limit) + CLAIM_LOOKAHEAD, limit=int(limit), claim=claim
    )
    return sql, (*due_params, *due_params, *kinds_params, *kinds_params)


def job_claim_next(*, worker_id: str, kinds: Iterable[str] | None = None) -> Claim | None:
    """Claim the next claimable job, or return None.

    The claim gets a fresh random token, attempt + 1 and a lease measured in
    database time, and writes its Attempt row; attempt + 1 is exact because
    the row lock is held until the commit.
    """
    claims = jobs_claim_batch(worker_id=worker_id, limit=1, kinds=kinds)
    return claims[0] if claims else None


def jobs_claim_batch(*, worker_id: str, limit: int, kinds: Iterable[str] | None = None) -> list[Claim]:
    """Claim up to `limit` claimable jobs, fairly between workspaces (see
    _CLAIM_SQL): each with its own token, attempt and lease, exactly as
    `job_claim_next` claims one."""
    kinds = tuple(sorted(kinds)) if kinds is not None else None
    rows = _claim_rows(_claim_sql(kinds, limit), worker_id)
    if not rows:
        rows = _claim_rows(_claim_sql(kinds, limit, fair=False), worker_id)
    claims = []
    for job_id, kind, number, workspace_id, payload, token in rows:
        if isinstance(payload, str):  # Django's connection loads jsonb as text
            payload = json.loads(payload)
        claims.append(
            Claim(
                job_id=job_id,
                kind=kind,
                attempt=number,
                token=token,
                worker_id=worker_id,
                workspace_id=workspace_id,
                payload=payload,
            )
        )
    return claims


def _claim_rows(statement: tuple[str, tuple], worker_id: str) -> list[tuple]:
    sql, params = statement
    # One statement, one transaction: the locks, the UPDATE and the Attempt
    # INSERTs commit together, before the caller starts the slow work.
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, settings.JOB_LEASE_SECONDS, worker_id, worker_id])
        return cursor.fetchall()


# --- heartbeat and checkpoints ------------------------------------------------


def job_heartbeat(*, claim: Claim, done: int | None = None, total: int | None = None) -> None:
    """Extend the lease and store progress. Refused (LeaseLost) once the lease
    has expired, even if no scanner has moved the job yet: an expired lease
    is never revived, so the scanner and this worker cannot both win."""
    changes: dict[str, Any] = {
        "lease_until": ClockTimestamp() + _interval(settings.JOB_LEASE_SECONDS),
        "updated_at": ClockTimestamp(),
    }
    if done is not None:
        changes["progress_done"] = done
    if total is not None:
        changes["progress_total"] = total
    if not _fenced(claim).filter(lease_until__gt=ClockTimestamp()).update(**changes):
        raise LeaseLost(f"job {claim.job_id} attempt {claim.attempt} lost its lease")


STAGING = "{name}~{attempt}"
_STAGE_SQL = """
INSERT INTO jobs_jobcheckpoint (job_id, name, attempt, data)
VALUES (%(job)s, %(name)s, %(attempt)s, %(data)s)
ON CONFLICT (job_id, name) DO UPDATE SET data = EXCLUDED.data, attempt = EXCLUDED.attempt
"""


def job_checkpoint(*, claim: Claim, name: str, data: Any) -> None:
    """Store a checkpoint, only while this claim still owns the job.

    Two steps, so that the job's row lock is never held across the large
    write: the data is written under a staging name of this attempt's own
    (no lock on the job row but the foreign key's KEY SHARE, which lease
    renewal does not wait for), then one short transaction proves the fence
    with the guarded UPDATE and renames the staged row into place (the
    renamed row keeps its stored data; nothing large is written again). A
    stale attempt's staged row is never renamed."""
    staging = STAGING.format(name=name, attempt=claim.attempt)
    # One statement (update_or_create took a transaction, a locking read and
    # a savepoint around its INSERT), its data bound on the server: quoted
    # into the statement's text, megabytes of JSON were escaped here and
    # scanned again by the server's parser before its JSON parser.
    with prepared_cursor() as cursor:
        cursor.execute(
            _STAGE_SQL, {"job": claim.job_id, "name": staging, "attempt": claim.attempt, "data": Jsonb(data)}
        )
    with transaction.atomic():
        # The guarded UPDATE takes the job's row lock and proves the fence
        # for the rename that shares its transaction.
        if not _fenced(claim).filter(lease_until__gt=ClockTimestamp()).update(updated_at=ClockTimestamp()):
            JobCheckpoint.objects.filter(job_id=claim.job_id, name=staging).delete()
            raise LeaseLost(f"job {claim.job_id} attempt {claim.attempt} lost its lease")
        JobCheckpoint.objects.filter(job_id=claim.job_id, name=name).delete()
        JobCheckpoint.objects.filter(job_id=claim.job_id, name=staging).update(name=name)


def job_load_checkpoint(*, job_id: uuid.UUID, name: str) -> Any | None:
    """A checkpoint an earlier attempt of this job stored, or None."""
    return JobCheckpoint.objects.filter(job_id=job_id, name=name).values_list("data", flat=True).first()


# --- accept -----------------------------------------------------------------


# Accepts, each guarded by its own fence (running, same attempt and token,
# lease unexpired, checked in the UPDATE itself); a row whose fence no
# longer holds is simply not returned.
_ACCEPT_SQL = """
WITH input AS (
    -- The outputs are one JSON array, each taken by its position: a jsonb[]
    -- escapes every quote of every output twice more, and jsonb_array_elements
    -- copies them all into a tuplestore (spilled to disk past work_mem).
    SELECT i.id, i.attempt, i.token, i.review, %(outputs)s::jsonb -> (i.n - 1)::integer AS output
    FROM unnest(%(ids)s::uuid[], %(attempts)s::integer[], %(tokens)s::uuid[], %(reviews)s::boolean[])
        WITH ORDINALITY AS i(id, attempt, token, review, n)
),
accepted AS (
    UPDATE jobs_job AS j
    SET state = CASE WHEN i.review OR j.review_required THEN 'awaiting_review' ELSE 'completed' END,
        review_required = i.review OR j.review_required,
        finished_at = CASE WHEN i.review OR j.review_required THEN NULL ELSE clock_timestamp() END,
        output = i.output, lease_token = NULL, lease_until = NULL, reason = '',
        {leave_state}
    FROM input AS i
    WHERE j.id = i.id AND j.state = 'running' AND j.attempt = i.attempt AND j.lease_token = i.token
      AND j.lease_until > clock_timestamp()
    RETURNING j.id, j.state, j.version, j.workspace_id, j.kind, j.attempt
),
closed AS (
    UPDATE jobs_attempt AS a SET outcome = 'succeeded', finished_at = clock_timestamp()
    FROM accepted WHERE a.job_id = accepted.id AND a.number = accepted.attempt
){event}
SELECT id, state, version, workspace_id, kind, attempt FROM accepted
"""

# With nothing to publish, the accepts' outbox events join their statement.
_ACCEPT_EVENT_SQL = """,
event AS (
    INSERT INTO jobs_outboxmessage (id, workspace_id, topic, payload, created_at, available_at,
                                    attempts, last_error)
    SELECT gen_random_uuid(), workspace_id, 'job.' || state, {payload},
           clock_timestamp(), clock_timestamp(), 0, ''
    FROM accepted
)"""


@functools.cache
def _accept_sql(with_events: bool) -> str:
    event = _ACCEPT_EVENT_SQL.format(payload=_event_payload_sql("", result="NULL")) if with_events else ""
    return _ACCEPT_SQL.format(leave_state=_leave_state_clause("j."), event=event)


def jobs_accept_outputs(
    *, accepts: list[tuple[Claim, Any, bool]], publish: Publish | None = None
) -> dict[uuid.UUID, str]:
    """Accept claims' outputs: each to `awaiting_review` when it needs review
    (now or on any earlier attempt), else to `completed` and `publish(job)`.
    The one accept of the state machine; `job_accept_output` accepts one.

    ``accepts`` holds (claim, output, needs_review). Returns the new state of
    every job whose fence held; a claim missing from the answer has lost its
    publication rights and nothing of it was written.

    With nothing to publish, the guarded UPDATE, the attempts and the events
    are one statement, hence one transaction. With `publish`, one
    transaction: the guarded UPDATE takes the row locks, and the
    publication's writes and the events share its commit."""
    if not accepts:
        return {}
    params = {
        "ids": [claim.job_id for claim, _, _ in accepts],
        "attempts": [claim.attempt for claim, _, _ in accepts],
        "tokens": [claim.token for claim, _, _ in accepts],
        "reviews": [review for _, _, review in accepts],
        "outputs": Jsonb([output for _, output, _ in accepts]),
    }
    outputs = {claim.job_id: output for claim, output, _ in accepts}
    # Bound on the server: megabytes of output quoted into the statement's
    # text would be escaped here, then scanned and copied by the server's
    # parser and planner before its JSON parser reads them.
    if publish is None:
        with prepared_cursor() as cursor:
            cursor.execute(_accept_sql(True), params)
            rows = cursor.fetchall()
    else:
        with transaction.atomic():
            with prepared_cursor() as cursor:
                cursor.execute(_accept_sql(False), params)
                rows = cursor.fetchall()
            for job_id, state, _, workspace_id, kind, attempt in rows:
                _publish_accepted(
                    job_id,
                    state,
                    outputs[job_id],
                    publish,
                    {
                        "workspace_id": workspace_id,
                        "id": job_id,
                        "kind": kind,
                        "state": state,
                        "attempt": attempt,
                    },
                )
    for job_id, state, version, *_ in rows:
        _staged(job_id, state, version, outputs[job_id])
    return {job_id: state for job_id, state, *_ in rows}


def _publish_accepted(job_id: uuid.UUID, state: str, output: Any, publish: Publish, row: dict) -> None:
    """Publish completed output and write the accept's event, in the accept's transaction."""
    result = None
    if state == State.COMPLETED:
        # The output just written is in hand: it is not read back.
        job = Job.objects.defer("output").get(pk=job_id)
        job.output = output
        result = publish(job)
        Job.objects.filter(pk=job_id).update(result=result)
    outbox_write(
        workspace_id=row["workspace_id"], topic=f"job.{state}", payload=job_event_payload(row, result=result)
    )


def job_accept_output(
    *, claim: Claim, output: Any, needs_review: bool = False, publish: Publish | None = None
) -> str:
    """Accept this claim's output (see `jobs_accept_outputs`) and return the
    job's new state. Zero rows raises LeaseLost and nothing is written."""
    states = jobs_accept_outputs(accepts=[(claim, output, needs_review)], publish=publish)
    if claim.job_id not in states:
        raise LeaseLost(f"job {claim.job_id} attempt {claim.attempt} may no longer publish")
    return states[claim.job_id]


def _staged(job_id: uuid.UUID, state: str, version: int, output: Any) -> None:
    """Tell the apps above (job_staged_for_review) that a job's output now
    waits for review; called after the accept committed."""
    if state != State.AWAITING_REVIEW:
        return
    for receiver, error in job_staged_for_review.send_robust(
        sender=Job, job_id=job_id, version=version, output=output
    ):
        if isinstance(error, Exception):
            log.error("job %s: %r failed after the accept: %s", job_id, receiver, error, exc_info=error)


def attempt_record_stale(*, claim: Claim, diagnostic: Any) -> None:
    """Keep a stale worker's result as its attempt's diagnostic, nothing more.

    Only an attempt that lost its lease by expiry (or whose expiry the
    scanner has not recorded yet) becomes `stale`; a cancelled or released
    attempt keeps the outcome that explains it. An attempt the scanner
    closed keeps its finish time: it ended when its lease was taken back,
    not when the stale result came."""
    Attempt.objects.filter(
        job_id=claim.job_id,
        number=claim.attempt,
        outcome__in=[Attempt.Outcome.RUNNING, Attempt.Outcome.EXPIRED],
    ).update(
        outcome=Attempt.Outcome.STALE,
        diagnostic=diagnostic,
        finished_at=Coalesce("finished_at", ClockTimestamp()),
    )


def attempt_record_provider_call(*, claim: Claim, request_id: str | None, usage: dict | None) -> None:
    """Append a remote call's request id and add its token usage to the
    attempt, as soon as the call returns. Not fenced: the provider did (and
    billed) the work whether or not this claim still owns the job."""
    with transaction.atomic():
        # The row lock serializes two calls of one attempt adding usage.
        attempt = (
            Attempt.objects.select_for_update()
            .only("provider_request_ids", "token_usage")
            .get(job_id=claim.job_id, number=claim.attempt)
        )
        ids = [*attempt.provider_request_ids, request_id]
        total = dict(attempt.token_usage or {})
        for key, value in (usage or {}).items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
        Attempt.objects.filter(pk=attempt.pk).update(provider_request_ids=ids, token_usage=total or None)


# --- fail -------------------------------------------------------------------


def job_fail(
    *, claim: Claim, error: str, transient: bool, reason: str | None = None, charged: bool = True
) -> str:
    """Record a failed attempt: transient failures retry after a jittered
    backoff while attempts remain; permanent ones, and the last attempt, go
    to `needs_attention` with the reason.

    ``error`` is kept on the attempt (staff); ``reason``, when given, is what
    the job shows its workspace's members instead (no internals).

    An attempt cut short by the infrastructure (a lock wait that timed out,
    a lost connection), not by its job, is not ``charged``: the budget
    moves up by one, as for a released attempt, until the job reaches
    JOB_MAX_TOTAL_ATTEMPTS; from there every failure counts."""
    delay = _job_backoff(claim.attempt)
    extend: Q | bool = (
        Q(max_attempts__lt=settings.JOB_MAX_TOTAL_ATTEMPTS) if transient and not charged else False
    )
    give_up: Q | bool = Q(attempt__gte=F("max_attempts")) if transient else True
    if extend is not False:
        give_up = Q(attempt__gte=F("max_attempts"), max_attempts__gte=settings.JOB_MAX_TOTAL_ATTEMPTS)
    shown = error if reason is None else reason
    final_reason = f"gave up after {claim.attempt} attempts: {shown}" if transient else shown
    retrying = (
        f"attempt {claim.attempt} failed, retrying: {shown}"
        if charged
        else f"attempt {claim.attempt} was interrupted, retrying (not counted): {shown}"
    )
    with transaction.atomic():
        updated = _fenced(claim).update(
            **_leave_state(
                state=_choose(give_up, Value(State.NEEDS_ATTENTION), Value(State.RETRYING)),
                run_after=ClockTimestamp() + _interval(delay),
                finished_at=_choose(
                    give_up,
                    ClockTimestamp(),
                    Value(None, output_field=DateTimeField()),
                    output_field=DateTimeField(),
                ),
                lease_token=None,
                lease_until=None,
                max_attempts=_choose(
                    extend,
                    F("max_attempts") + 1,
                    F("max_attempts"),
                    output_field=Job._meta.get_field("max_attempts"),
                ),
                reason=_choose(give_up, Value(final_reason), Value(retrying)),
            )
        )
        if not updated:
            raise LeaseLost(f"job {claim.job_id} attempt {claim.attempt} may no longer record failure")
        state = _state_of(claim.job_id)
        Attempt.objects.filter(job_id=claim.job_id, number=claim.attempt).update(
            outcome=Attempt.Outcome.FAILED if state == State.NEEDS_ATTENTION else Attempt.Outcome.RETRY,
            error=error,
            finished_at=ClockTimestamp(),
        )
        if state == State.NEEDS_ATTENTION:
            _job_event(claim.job_id, "job.needs_attention", reason=shown)
    return state


def job_release(*, claim: Claim) -> None:
    """A stopping worker hands its job back for another worker to claim.

    The released attempt does not count against the budget (max_attempts + 1):
    the worker stopped, the job did not fail."""
    with transaction.atomic():
        updated = _fenced(claim).update(
            **_leave_state(
                state=State.RETRYING,
                run_after=ClockTimestamp(),
                lease_token=None,
                lease_until=None,
                max_attempts=F("max_attempts") + 1,
                reason=f"attempt {claim.attempt} released by stopping worker {claim.worker_id}",
            )
        )
        if not updated:
            raise LeaseLost(f"job {claim.job_id} attempt {claim.attempt} was no longer held")
        Attempt.objects.filter(job_id=claim.job_id, number=claim.attempt).update(
            outcome=Attempt.Outcome.RELEASED, finished_at=ClockTimestamp()
        )
        _notify(claim.kind)


# --- expire -------------------------------------------------------------------


def jobs_expire_leases(*, batch_size: int = 100, max_batches: int = 100) -> list[tuple[uuid.UUID, str]]:
    """Move running jobs whose lease has expired to `retrying` (or to
    `needs_attention` on their last attempt), in bounded batches. A retried
    job waits a backoff with full jitter, like a failed attempt: jobs whose
    worker died together do not all come back in the same instant.

    SKIP LOCKED: a row locked by a worker's heartbeat or accept is passed over
    this time. The UPDATE re-checks `lease_until < clock_timestamp()` itself,
    so it never takes a job whose lease was extended after it was selected.
    """
    moved: list[tuple[uuid.UUID, str]] = []
    for _ in range(max_batches):
        with transaction.atomic():
            locked = list(
                Job.objects.filter(state=State.RUNNING, lease_until__lt=ClockTimestamp())
                .select_for_update(skip_locked=True)
                .order_by("lease_until")
                .values_list("id", "attempt")[:batch_size]
            )
            if not locked:
                break
            ids = [job_id for job_id, _ in locked]
            # Each job its own delay (the row lock keeps its attempt as read).
            run_after = Case(
                *[
                    When(pk=job_id, then=ClockTimestamp() + _interval(_job_backoff(number)))
                    for job_id, number in locked
                ],
                output_field=DateTimeField(),
            )
            last = Q(attempt__gte=F("max_attempts"))
            Job.objects.filter(id__in=ids, state=State.RUNNING, lease_until__lt=ClockTimestamp()).update(
                **_leave_state(
                    state=Case(When(last, then=Value(State.NEEDS_ATTENTION)), default=Value(State.RETRYING)),
                    run_after=run_after,
                    finished_at=_choose(
                        last,
                        ClockTimestamp(),
                        Value(None, output_field=DateTimeField()),
                        output_field=DateTimeField(),
                    ),
                    lease_token=None,
                    lease_until=None,
                    reason=Case(
                        When(
                            last,
                            then=Value(
                                "lease expired on the last allowed attempt: the worker stopped renewing it"
                            ),
                        ),
                        default=Value("lease expired: the worker stopped renewing it; retrying"),
                    ),
                )
            )
            batch = list(
                Job.objects.filter(id__in=ids)
                .exclude(state=State.RUNNING)
                .values_list("id", "state", "attempt")
            )
            for job_id, state, number in batch:
                Attempt.objects.filter(job_id=job_id, number=number, outcome=Attempt.Outcome.RUNNING).update(
                    outcome=Attempt.Outcome.EXPIRED,
                    finished_at=ClockTimestamp(),
                    error="lease expired",
                )
                if state == State.NEEDS_ATTENTION:
                    _job_event(job_id, "job.needs_attention", reason="lease expired")
                moved.append((job_id, state))
            if any(state == State.RETRYING for _, state, _ in batch):
                _notify("recovered")
        if len(ids) < batch_size:
            break
    return moved


# The sessions whose open transaction holds the row of a running job whose
# lease expired `leases` leases ago. The row's xmax names the transaction
# that updated or locked it last; a transaction still open holds a lock on
# its own id, which names its backend. It began before the lease ran out (a
# guarded accept or renewal needs an unexpired lease), which also keeps a
# multixact id that happens to equal some other transaction's id out.
_STALLED_SQL = """
SELECT DISTINCT j.id, l.pid
FROM jobs_job AS j
JOIN pg_locks AS l ON l.locktype = 'transactionid' AND l.granted AND l.mode = 'ExclusiveLock'
     AND l.transactionid::text = j.xmax::text
JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE j.state = 'running'
  AND j.lease_until < clock_timestamp() - make_interval(secs => %s)
  AND a.xact_start < j.lease_until
  AND l.pid <> pg_backend_pid()
"""


def jobs_end_stalled_sessions(*, leases: float) -> list[tuple[uuid.UUID, int]]:
    """End the database sessions still holding the rows of jobs whose lease
    expired more than ``leases`` leases ago; returns (job id, backend pid).

    A worker paused (SIGSTOP, a frozen VM, a partition) inside a transaction
    keeps its row locks with no bound: recovery passes over the locked job
    (SKIP LOCKED), and every accept that needs the same shared rows (the
    workspace's, a kind's own) waits behind it. Its lease ran out long ago, so nothing
    it could still commit would be accepted: its session is terminated, the
    transaction rolls back, and the next expiry scan re-queues the job."""
    with connection.cursor() as cursor:
        cursor.execute(_STALLED_SQL, [leases * settings.JOB_LEASE_SECONDS])
        stalled = cursor.fetchall()
        for job_id, pid in stalled:
            log.warning(
                "job %s: lease expired long ago and its row is still held by backend %s; "
                "terminating that session",
                job_id,
                pid,
            )
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
    return stalled


# --- cancel and retry (staff and owners) ------------------------------------------


def job_cancel(*, job_id: uuid.UUID, expected_version: int | None = None, by_label: str = "") -> None:
    """Cancel a job that has not finished. Clears the token, so a running
    worker loses publication rights; the remote call it may be making is not
    stopped (it notices at its next heartbeat)."""
    guard = Job.objects.filter(pk=job_id, state__in=CANCELLABLE_STATES)
    if expected_version is not None:
        guard = guard.filter(version=expected_version)
    with transaction.atomic():
        if not guard.update(
            **_leave_state(
                state=State.CANCELLED,
                lease_token=None,
                lease_until=None,
                finished_at=ClockTimestamp(),
                reason=f"cancelled by {by_label}" if by_label else "cancelled",
            )
        ):
            raise _why_not(job_id, "cancel", expected_version)
        job = Job.objects.filter(pk=job_id).values("attempt").get()
        Attempt.objects.filter(job_id=job_id, number=job["attempt"], outcome=Attempt.Outcome.RUNNING).update(
            outcome=Attempt.Outcome.CANCELLED, finished_at=ClockTimestamp(), error="job cancelled"
        )
        _job_event(job_id, "job.cancelled")


def job_retry(*, job_id: uuid.UUID, by_label: str = "") -> None:
    """Staff send a failed or cancelled job back to the queue with a fresh
    attempt budget. Attempt numbers keep growing (they are half the fence),
    so the budget moves instead: max_attempts = attempt + JOB_MAX_ATTEMPTS."""
    with transaction.atomic():
        if not Job.objects.filter(pk=job_id, state__in=RETRYABLE_STATES).update(
            **_leave_state(
                state=State.QUEUED,
                run_after=ClockTimestamp(),
                max_attempts=F("attempt") + settings.JOB_MAX_ATTEMPTS,
                finished_at=None,
                reason=f"retried by {by_label}" if by_label else "retried",
            )
        ):
            raise _why_not(job_id, "retry", None)
        job = Job.objects.filter(pk=job_id).values("kind").get()
        _job_event(job_id, "job.retried")
        _notify(job["kind"])


def job_requeue_with_input(
    *, job_id: uuid.UUID, expected_version: int, payload_changes: dict, by_label: str, reason: str
) -> int:
    """Send a job a person is looking at (awaiting review, or needing
    attention) back to the queue with new input merged into its payload;
    returns the new version.

    Versioned like approve: one guarded UPDATE on (state, version), so a
    decision made on a page that is no longer current changes nothing. The
    job gets a fresh attempt budget (the new input is a new piece of work,
    as with a staff retry), but never past JOB_MAX_TOTAL_ATTEMPTS: beyond
    it, each requeue allows one attempt. It comes back to review whatever it
    produces (a person asked for it), and its staged output is cleared."""
    merged = Func(
        F("payload"),
        Value(payload_changes, output_field=JSONField()),
        template="(%(expressions)s)",
        arg_joiner=" || ",
        output_field=JSONField(),
    )
    with transaction.atomic():
        if not Job.objects.filter(pk=job_id, state__in=REQUEUEABLE_STATES, version=expected_version).update(
            **_leave_state(
                state=State.QUEUED,
                payload=merged,
                run_after=ClockTimestamp(),
                max_attempts=Greatest(
                    Least(F("attempt") + settings.JOB_MAX_ATTEMPTS, Value(settings.JOB_MAX_TOTAL_ATTEMPTS)),
                    F("attempt") + 1,
                ),
                review_required=True,
                output=None,
                result=None,
                finished_at=None,
                reason=f"{reason} by {by_label}" if by_label else reason,
            )
        ):
            raise _why_not(job_id, "requeue", expected_version)
        job = Job.objects.filter(pk=job_id).values("kind").get()
        _job_event(job_id, "job.requeued", by=by_label, reason=reason)
        _notify(job["kind"])
    return expected_version + 1


# --- review -------------------------------------------------------------------------


def job_review_edit(*, job_id: uuid.UUID, expected_version: int, output: Any) -> int:
    """Save a reviewer's edits to the staged output; returns the new version."""
    updated = Job.objects.filter(pk=job_id, state=State.AWAITING_REVIEW, version=expected_version).update(
        output=Value(output, output_field=Job._meta.get_field("output")),
        version=F("version") + 1,
        updated_at=ClockTimestamp(),
    )
    if not updated:
        raise _why_not(job_id, "edit", expected_version)
    return expected_version + 1


def job_approve(*, job_id: uuid.UUID, expected_version: int, output: Any, publish: Publish) -> dict | None:
    """Approve reviewed output and publish it, in one transaction: still
    `awaiting_review` at the version the reviewer saw, or nothing happens."""
    with transaction.atomic():
        if not Job.objects.filter(pk=job_id, state=State.AWAITING_REVIEW, version=expected_version).update(
            **_leave_state(
                state=State.COMPLETED,
                output=Value(output, output_field=Job._meta.get_field("output")),
                finished_at=ClockTimestamp(),
                reason="",
            )
        ):
            raise _why_not(job_id, "approve", expected_version)
        result = publish(Job.objects.get(pk=job_id))
        Job.objects.filter(pk=job_id).update(result=result)
        _job_event(job_id, "job.completed", result=result)
    return result


def job_reject(*, job_id: uuid.UUID, expected_version: int, reason: str) -> None:
    """Reject reviewed output: the job needs attention, nothing is published."""
    with transaction.atomic():
        if not Job.objects.filter(pk=job_id, state=State.AWAITING_REVIEW, version=expected_version).update(
            **_leave_state(
                state=State.NEEDS_ATTENTION,
                finished_at=ClockTimestamp(),
                reason=f"rejected in review: {reason}",
            )
        ):
            raise _why_not(job_id, "reject", expected_version)
        _job_event(job_id, "job.needs_attention", reason=f"rejected in review: {reason}")
