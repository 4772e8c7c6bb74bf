"""Pages that name no icon (the admin's) make browsers ask for /favicon.ico: it leads to the portal's icon."""

from django.contrib.staticfiles import finders


def test_favicon_ico_redirects_to_the_portal_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].endswith("portal/favicon.svg")
    assert finders.find("portal/favicon.svg")  # shipped, so the static files server answers it
