"""Self-service pages for researchers: pool catalog, pool pages, submit with preview, my workflows, requests.

Server-rendered with htmx (no SPA). Views are thin: they ask `access.policy`, call a service, render.
"""
