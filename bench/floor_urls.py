"""The floor of a durable upload, served beside the product's URLs in the
admission benchmark: read a multipart upload, write it to the same storage
with fsync, insert one row in one transaction, answer 202. Nothing less can
promise that an accepted upload survives a crash; everything the product's
admission does above it (authentication, idempotency, the outbox row, the
job's own bookkeeping) is what the benchmark compares."""

import hashlib
import os
import uuid

from django.conf import settings
from django.db import connection, transaction
from django.http import JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

TABLE = "bench_floor_upload"


@csrf_exempt
@require_POST
def floor_upload(request):
    upload = request.FILES["file"]
    digest = hashlib.sha256()
    name = uuid.uuid4().hex
    folder = os.path.join(settings.MEDIA_ROOT, "floor")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as out:
        for chunk in upload.chunks():
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (id, sha256, size) VALUES (%s, %s, %s)",
            [name, digest.hexdigest(), upload.size],
        )
    return JsonResponse({"id": name}, status=202)


urlpatterns = [
    path("bench/floor-upload", floor_upload),
    path("", include("config.urls")),
]
