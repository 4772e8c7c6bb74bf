"""The profile page's credentials (docs/credentials.md): your credentials' names, types and keys, a form to add
one, and delete. The same service as `osmo credential set|list|delete`; the same policy actions on
`credentials/<you>`; never a value on the page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from access import actions, policy
from access.services import credentials
from configs.revisions import Actor
from portal.errors import DomainError, PermissionDenied
from selfservice.forms import CredentialForm


def context(request, form: CredentialForm | None = None) -> dict:
    """The profile page's credentials section: shown when the user may read their credentials."""
    mine = actions.credentials(request.user.get_username())
    if not policy.decide(request, actions.CREDENTIALS_READ, mine).allowed:
        return {"credentials": None}
    return {"credentials": credentials.credentials_of(request.user), "credential_form": form or CredentialForm()}


@login_required
@require_POST
def credential_add(request):
    from selfservice.views import _error_page, profile_page  # the page this form lives on

    try:
        policy.require(request, actions.CREDENTIALS_UPDATE, actions.credentials(request.user.get_username()))
    except PermissionDenied as error:
        return _error_page(request, error)
    form = CredentialForm(request.POST)
    if form.is_valid():
        try:
            name = form.cleaned_data["name"]
            credentials.set_credential(request.user, name, form.body(), Actor.for_request(request, "page"))
            messages.success(request, f"Credential {name} saved.")
            return redirect("selfservice:profile")
        except DomainError as error:
            field = "name" if error.field == "name" else "payload" if error.field else None
            form.add_error(field, f"{error.field}: {error.reason}" if error.field and field != "name" else error.reason)
    return profile_page(request, credential_form=form)


@login_required
@require_POST
def credential_delete(request, name: str):
    from selfservice.views import _error_page

    try:
        policy.require(request, actions.CREDENTIALS_DELETE, actions.credentials(request.user.get_username()))
        credentials.delete(request.user, name, Actor.for_request(request, "page"))
    except DomainError as error:
        return _error_page(request, error)
    messages.success(request, f"Credential {name} deleted.")
    return redirect("selfservice:profile")
