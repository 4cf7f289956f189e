"""The dashboard's logic behind app.py and pages/: views built from the store's rows, forms,
demos. Only common.py and diffview.show use Streamlit; no skillopt code outside ui/ does."""
