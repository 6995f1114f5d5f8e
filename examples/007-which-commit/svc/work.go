package main

// How many SHA-256 rounds each request costs: the one number the story's commits change.
const rounds = 10000
