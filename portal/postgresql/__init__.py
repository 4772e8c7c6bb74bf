"""Django's PostgreSQL backend with a health check that costs no round trip (see `base`) and timestamps parsed
by psycopg's compiled loader (`timestamps`)."""
