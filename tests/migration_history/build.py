"""Migrate the database in DATABASE_URL with the former migrations and fill
it with one of everything; prints the API token it created.

Run as `python -m tests.migration_history.build` from the project folder."""

import django
from django.conf import settings

FORMER = {
    "catalog": "tests.migration_history.catalog",
    "jobs": "tests.migration_history.jobs",
    "review": "tests.migration_history.review",
    "accounts": None,  # did not exist yet
}

ROWS = """
INSERT INTO django_content_type (app_label, model)
VALUES ('catalog', 'workspace'), ('catalog', 'membership'), ('catalog', 'apitoken');
INSERT INTO auth_permission (name, content_type_id, codename)
SELECT 'Can change api token', id, 'change_apitoken' FROM django_content_type
WHERE app_label = 'catalog' AND model = 'apitoken';
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
                       is_staff, is_active, date_joined)
VALUES ('!', false, 'ulla', '', '', '', true, true, now());
INSERT INTO auth_user_user_permissions (user_id, permission_id)
SELECT u.id, p.id FROM auth_user u, auth_permission p
WHERE u.username = 'ulla' AND p.codename = 'change_apitoken';
INSERT INTO catalog_workspace (slug, name, created_at) VALUES ('before', 'Before the move', now());
INSERT INTO catalog_membership (workspace_id, user_id, role)
SELECT w.id, u.id, 'reviewer' FROM catalog_workspace w, auth_user u
WHERE w.slug = 'before' AND u.username = 'ulla';
INSERT INTO catalog_apitoken (user_id, name, prefix, token_hash, created_at)
SELECT id, 'old', 'psk_old', %(token_hash)s, now() FROM auth_user WHERE username = 'ulla';
INSERT INTO catalog_supplier (workspace_id, name, created_at)
SELECT id, 'Old Supplier', now() FROM catalog_workspace WHERE slug = 'before';
INSERT INTO jobs_job (id, kind, workspace_id, payload, state, version, attempt, max_attempts,
                      worker_id, idempotency_key, request_fingerprint, progress_done,
                      progress_total, reason, review_required, result, waiting_seconds,
                      running_seconds, review_seconds, finished_at)
SELECT '00000000-0000-0000-0000-000000000001', 'parse_sheet', id, '{}', 'completed', 3, 1, 5,
       '', 'old-key', '', 1, 1, '', false, '{"item_count": 1}', 0, 0, 0, now()
FROM catalog_workspace WHERE slug = 'before';
INSERT INTO catalog_catalogrevision (workspace_id, supplier_id, job_id, attempt, published_at,
                                     item_count)
SELECT w.id, s.id, '00000000-0000-0000-0000-000000000001', 1, now(), 1
FROM catalog_workspace w JOIN catalog_supplier s ON s.workspace_id = w.id WHERE w.slug = 'before';
INSERT INTO catalog_catalogitem (revision_id, sku, description, unit_price, currency,
                                 source_sheet, source_row)
SELECT id, 'OLD-1', 'Kept across the move', 1.5, 'EUR', 'Sheet1', 2 FROM catalog_catalogrevision;
"""


def main() -> None:
    settings.MIGRATION_MODULES = FORMER
    django.setup()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from accounts.services import _token_hash

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    with connection.cursor() as cursor:
        token = "psk_token-from-before-the-move"
        cursor.execute(ROWS, {"token_hash": _token_hash(token)})
    print(token)


if __name__ == "__main__":
    main()
