"""What the environments over a private Orthanc share: the web base (`web`: Orthanc + chromium,
the contract's calls on the page, the check dispatcher) and the database check kinds (`checks`).
Not an environment itself: `orthanc_explorer` and `ohif` build on it."""
