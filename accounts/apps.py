from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in


def _clear_own_failures(sender, request, user, **kwargs) -> None:
    from accounts.services import signin_failures_clear

    if request is not None:
        signin_failures_clear(
            username=user.get_username(), ip_address=getattr(request, "axes_ip_address", None)
        )


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        user_logged_in.connect(_clear_own_failures, dispatch_uid="accounts.clear_own_failures")
