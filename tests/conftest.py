import pytest

from accounts.models import Membership
from accounts.services import membership_add, workspace_create
from tests import openapi_check
from tests.helpers import ProcessGroup


@pytest.fixture(autouse=True)
def local_webhook_receivers(settings):
    """Test receivers listen on http://127.0.0.1; tests of the refusal turn
    these off again."""
    settings.WEBHOOK_ALLOW_INSECURE = True
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True


# Modules whose tests share what a module fixture computed once, or must not run at once (each
# `make run` of tests/test_readme.py writes the project's .port, which `make -s api` reads): under
# pytest-xdist each runs whole in one worker, one test after another; every other test is
# scheduled on its own, wherever a worker is free.
WHOLE_MODULES = frozenset(
    {
        "tests/catalog/test_corpus_figures.py",
        "tests/catalog/test_generated_sheets.py",
        "tests/test_readme.py",
    }
)


# The browser tests run one after another in one worker, on one Chromium: several Chromiums at
# once on two cores starve each other (one closed mid-run).
BROWSER_TESTS = "tests/browser/"


def _first(item) -> tuple[bool, bool, bool, bool]:
    return (
        not item.get_closest_marker("soak"),
        not item.get_closest_marker("once"),
        not item.nodeid.startswith(BROWSER_TESTS),
        item.nodeid.split("::", 1)[0] not in WHOLE_MODULES,
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """The soak, then the tests marked `once` (the corpus figures' module, then the generated API
    requests) go first: they are the longest by far, and under pytest-xdist (`make test` runs three
    workers) a long test that starts last ends the run alone; a worker is given its next unit
    while it runs one, so the first units each start on a worker of their own. After
    pytest-django's ordering (trylast), which the sort keeps within each part."""
    items.sort(key=_first)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Each test is a unit of work, but a module of WHOLE_MODULES is one, and so are all the
    browser tests; units go out in the order above. (pytest-xdist's own xdist_group mark does not reach pytest 9's test ids.)"""
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(BROWSER_TESTS):
                return BROWSER_TESTS
            module = nodeid.split("::", 1)[0]
            return module if module in WHOLE_MODULES else nodeid

    config.option.loadscopereorder = False  # the collection's order, not the largest unit first
    return Scheduling(config, log)


def pytest_configure(config):
    from django.conf import settings

    # Outermost, so it sees each API answer as the client does.
    settings.MIDDLEWARE = ["tests.openapi_check.OpenApiCheck", *settings.MIDDLEWARE]
    # A real hasher costs about a second per test user and tests nothing here
    # (Django's own test settings do the same); processes the tests start keep
    # the production hashers.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Pages rendered in the test process read the static files where they are
    # (no collectstatic, no manifest); tests/config/test_static_files.py checks
    # the hashed, compressed files the service serves.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # ...and WhiteNoise in the test process scans no STATIC_ROOT: the README's `make run` test
    # runs collectstatic into the project's staticfiles/ while other test processes start clients.
    settings.STATIC_ROOT = None


@pytest.fixture(autouse=True)
def api_answers_match_the_openapi_document():
    """Fail the test that received an API answer the document does not describe."""
    del openapi_check.FAILURES[:]
    yield
    failures = list(openapi_check.FAILURES)
    del openapi_check.FAILURES[:]
    assert not failures, "API answers that do not match /api/openapi.json:\n" + "\n".join(failures)


@pytest.fixture
def workspace(db):
    return workspace_create(slug="acme", name="Acme Supplies")


@pytest.fixture
def other_workspace(db):
    return workspace_create(slug="other", name="Other Co")


@pytest.fixture
def member(workspace):
    return membership_add(
        workspace=workspace, username="mia", role=Membership.Role.MEMBER, password="mia-password-1"
    ).user


@pytest.fixture
def reviewer(workspace):
    return membership_add(
        workspace=workspace, username="rey", role=Membership.Role.REVIEWER, password="rey-password-1"
    ).user


@pytest.fixture
def outsider(other_workspace):
    return membership_add(
        workspace=other_workspace, username="olaf", role=Membership.Role.ADMIN, password="olaf-password-1"
    ).user


@pytest.fixture
def processes(transactional_db, tmp_path):
    """Real manage.py processes against the test database; all are killed
    before the database is flushed."""
    group = ProcessGroup(tmp_path)
    yield group
    group.stop_all()
