"""Index storage: the :class:`~citewise.store.base.Store` Protocol and its backends."""
