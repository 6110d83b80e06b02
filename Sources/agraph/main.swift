print("agraph")
