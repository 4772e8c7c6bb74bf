"""Django's PostgreSQL backend with a health check that costs no round trip (see `base`)."""
