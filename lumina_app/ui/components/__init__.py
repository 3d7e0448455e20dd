"""Small presentational components; each reads the states it shows, nothing else."""


def testid(name: str) -> dict:
    """The ``data-testid`` attribute the tests and the page's scripts find an element by."""
    return {"data-testid": name}
