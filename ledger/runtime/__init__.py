"""What training code imports: metrics, seeds and RNG states, determinism, monitors."""
