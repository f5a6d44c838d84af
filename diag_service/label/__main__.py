"""``python -m diag_service.label ARCHIVE --out OUT``: the ``diag label`` command on its own."""

from diag_service.label.cli import app

if __name__ == "__main__":
    app()
