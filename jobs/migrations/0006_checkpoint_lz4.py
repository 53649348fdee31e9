from django.db import migrations

# A checkpoint (a parsed table: megabytes of JSON) is written once per
# attempt, while the parse goes on beside it, and read back rarely. lz4
# compresses it about twice as fast as pglz for a fifth more bytes. Only a
# server built with lz4 offers it; elsewhere the column keeps the default.
LZ4 = """
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE jobs_jobcheckpoint ALTER COLUMN data SET COMPRESSION lz4;
    END IF;
END
$$;
"""
DEFAULT = "ALTER TABLE jobs_jobcheckpoint ALTER COLUMN data SET COMPRESSION DEFAULT"


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0005_fair_claim"),
    ]

    operations = [migrations.RunSQL(LZ4, DEFAULT)]
