"""One module per `medspot` sub-command; each exposes `register(subparsers)`."""

__all__: list[str] = []
