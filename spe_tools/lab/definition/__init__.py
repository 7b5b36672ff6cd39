"""What a lab is: the lab file read into a model, its keys and the proxy kinds it names."""
