"""Operations endpoints and metric collectors (docs/operations.md). Wiring: they read several apps."""
