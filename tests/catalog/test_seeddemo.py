"""`seeddemo` runs on every `make run`: a second run must change nothing."""

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client


class StatementLog:
    """Every SQL statement run, and the ones the server refused."""

    def __init__(self):
        self.statements: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def __call__(self, execute, sql, params, many, context):
        self.statements.append(sql)
        try:
            return execute(sql, params, many, context)
        except Exception as exc:
            self.failed.append((sql, repr(exc)))
            raise


def test_second_run_keeps_the_demo_users_password_and_session(db):
    call_command("seeddemo")
    client = Client()
    # Through the sign-in page: the throttling backend needs the request.
    assert (
        client.post("/accounts/login/", {"username": "demo", "password": "demo-password"}).status_code == 302
    )
    password_hash = get_user_model().objects.get(username="demo").password

    call_command("seeddemo")

    assert get_user_model().objects.get(username="demo").password == password_hash
    assert client.get("/jobs/").status_code == 200  # still signed in


def test_second_run_writes_nothing_and_no_statement_fails(db):
    call_command("seeddemo")
    log = StatementLog()

    with connection.execute_wrapper(log):
        call_command("seeddemo")

    writes = [
        sql
        for sql in log.statements
        if sql.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}
    ]
    assert log.failed == []
    assert writes == []
    assert log.statements  # it did look


def test_a_changed_demo_password_is_kept(db):
    call_command("seeddemo")
    user = get_user_model().objects.get(username="demo")
    user.set_password("my-own-password-1")
    user.save()

    call_command("seeddemo")

    assert get_user_model().objects.get(username="demo").check_password("my-own-password-1")
