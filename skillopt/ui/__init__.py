"""Shared Streamlit helpers for app.py and pages/ (the only skillopt code that imports streamlit)."""
