"""The only door to jaxlib: StableHLO emission (`stablehlo`) and the PJRT runtime (`pjrt`)."""
