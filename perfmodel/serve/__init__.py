"""`perfmodel serve`: the planner's web page and its JSON HTTP API, on top of the Python API.

The request bodies are the Python API's keywords and the responses the CLI's `--format json` documents (one schema);
schemas.py derives the request models from perfmodel/api.py, work.py runs a request within its bounds, app.py is the
FastAPI application and static/ the page (one HTML file, one script, one style sheet: no build step, no CDN).
"""
