from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from jobs.signals import job_staged_for_review
        from review.services import review_snapshot_on_staged

        job_staged_for_review.connect(review_snapshot_on_staged, dispatch_uid="review-snapshot")
