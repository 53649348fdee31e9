"""Sign-in throttling (django-axes) per username and per client address, on
the sign-in page and the admin's, with one answer whether the account
exists or not."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

LIMIT = 5
LOCKED = "Too many failed sign-ins for this username or from this address."


@pytest.fixture(autouse=True)
def limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    # Dozens of sign-ins: a fast hasher keeps the test about throttling.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def sign_in(client, username, password, path="/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def browser(address):
    return Client(REMOTE_ADDR=address)


def test_the_right_password_is_refused_after_repeated_failures(member):
    client = browser("10.0.0.1")
    for _ in range(LIMIT - 1):
        assert sign_in(client, "mia", "wrong").status_code == 200  # the form again
    assert sign_in(client, "mia", "wrong").status_code == 429  # the last one allowed
    response = sign_in(client, "mia", "mia-password-1")
    assert response.status_code == 429
    assert LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_failures_from_one_address_lock_the_account_only_there(member):
    stranger = browser("10.0.1.1")
    for _ in range(LIMIT):
        sign_in(stranger, "mia", "wrong")
    assert sign_in(stranger, "mia", "mia-password-1").status_code == 429
    # Anonymous guesses cannot lock mia out of her own account elsewhere.
    assert sign_in(browser("10.0.2.1"), "mia", "mia-password-1").status_code == 302


def test_a_sign_in_of_another_account_does_not_clear_the_failures(member, reviewer):
    client = browser("10.0.7.1")
    for _ in range(LIMIT - 1):
        sign_in(client, "mia", "wrong")
    # The guesser signs into an account of their own from the same address...
    assert sign_in(client, "rey", "rey-password-1").status_code == 302
    client.logout()
    # ...and the count against mia goes on: one more failure locks it.
    assert sign_in(client, "mia", "wrong").status_code == 429
    assert sign_in(client, "mia", "mia-password-1").status_code == 429


def test_failures_are_counted_per_address_across_accounts_and_per_account(member):
    client = browser("10.0.8.1")
    for i in range(LIMIT - 1):
        sign_in(client, f"guess{i}", "wrong")
    assert sign_in(client, "mia", "wrong").status_code == 429  # the address's fifth failure
    other = browser("10.0.8.2")
    for _ in range(LIMIT - 1):
        assert sign_in(other, "mia", "wrong").status_code == 200  # a count of its own


def test_an_address_is_locked_for_every_account(member, reviewer):
    client = browser("10.0.3.1")
    for i in range(LIMIT):
        sign_in(client, f"guess{i}", "wrong")
    assert sign_in(client, "rey", "rey-password-1").status_code == 429
    # Another address still signs in.
    assert sign_in(browser("10.0.3.2"), "rey", "rey-password-1").status_code == 302


def test_the_answer_does_not_tell_whether_an_account_exists(member):
    answers = []
    for username, address in (("mia", "10.0.4.1"), ("nobody-here", "10.0.4.2")):
        client = browser(address)
        failures = [sign_in(client, username, "wrong") for _ in range(LIMIT)]
        locked = sign_in(client, username, "wrong")
        answers.append(
            (
                [r.status_code for r in failures],
                locked.status_code,
                locked.content.decode().replace(username, "<user>"),
            )
        )
    assert answers[0] == answers[1]
    assert answers[0][1] == 429


def test_admin_sign_in_is_throttled_too(db):
    User.objects.create_superuser("root", "root@example.com", "root-password-1")
    client = browser("10.0.5.1")
    for _ in range(LIMIT - 1):
        assert sign_in(client, "root", "wrong", "/admin/login/").status_code == 200
    sign_in(client, "root", "wrong", "/admin/login/")
    response = sign_in(client, "root", "root-password-1", "/admin/login/")
    assert response.status_code == 429
    assert LOCKED in response.content.decode()


def test_a_success_clears_the_count(member):
    client = browser("10.0.6.1")
    for _ in range(LIMIT - 1):
        sign_in(client, "mia", "wrong")
    assert sign_in(client, "mia", "mia-password-1").status_code == 302
    client.logout()
    for _ in range(LIMIT - 1):
        sign_in(client, "mia", "wrong")
    assert sign_in(client, "mia", "mia-password-1").status_code == 302
