int main() { return 0; }  // placeholder: the CLI is being written
